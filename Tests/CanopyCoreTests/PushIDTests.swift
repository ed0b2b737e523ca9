// PushIDTests -- format, ordering under a repeating or backwards clock, carry, and timestamp decoding.

import Synchronization
import Testing

@testable import CanopyCore

@Suite struct PushIDTests {
    private static let alphabet = Set("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)

    @Test func formatIsTwentyAlphabetCharacters() {
        var generator = PushIDGenerator()
        let id = generator.next(nowMilliseconds: 1_700_000_000_000)
        #expect(id.utf8.count == 20)
        #expect(id.utf8.allSatisfy { Self.alphabet.contains($0) })
    }

    @Test func alphabetIsInASCIIOrder() {
        #expect(PushIDGenerator.alphabet == PushIDGenerator.alphabet.sorted())
        #expect(Set(PushIDGenerator.alphabet).count == 64)
    }

    @Test(arguments: [0, 1, 63, 64, 1_700_000_000_000, 4_102_444_800_000, 281_474_976_710_655] as [Int64])
    func timestampDecodesBack(_ now: Int64) {
        var generator = PushIDGenerator()
        let id = generator.next(nowMilliseconds: now)
        #expect(PushIDGenerator.timestamp(of: id) == now)
    }

    @Test func knownTimestampPrefix() {
        // 1 ms → seven '-' (zero) then '0' (one).
        var generator = PushIDGenerator()
        #expect(generator.next(nowMilliseconds: 1).hasPrefix("-------0"))
        #expect(generator.next(nowMilliseconds: 64).hasPrefix("------0-"))
    }

    @Test func strictlyIncreasingWithinOneMillisecond() {
        var generator = PushIDGenerator()
        var previous = generator.next(nowMilliseconds: 1_700_000_000_000)
        for _ in 0..<10_000 {
            let id = generator.next(nowMilliseconds: 1_700_000_000_000)
            #expect(id > previous)
            #expect(PushIDGenerator.timestamp(of: id) == 1_700_000_000_000)
            previous = id
        }
    }

    @Test func clockGoingBackwardsStaysOrdered() {
        var generator = PushIDGenerator()
        let first = generator.next(nowMilliseconds: 5_000)
        let second = generator.next(nowMilliseconds: 4_000)
        let third = generator.next(nowMilliseconds: 5_001)
        #expect(first < second)
        #expect(second < third)
        #expect(PushIDGenerator.timestamp(of: second) == 5_000)
    }

    @Test func carryPropagatesAndOverflowAdvancesTime() {
        var allMax = MaxRandom()
        var generator = PushIDGenerator()
        let top = generator.next(nowMilliseconds: 10, using: &allMax)
        #expect(top.hasSuffix(String(repeating: "z", count: 12)))
        let next = generator.next(nowMilliseconds: 10, using: &allMax)
        #expect(next > top)
        #expect(PushIDGenerator.timestamp(of: next) == 11)
        #expect(next.hasSuffix(String(repeating: "-", count: 12)))
    }

    @Test func incrementCarriesFromTheRight() {
        var random = SplitMix64(seed: 7)
        var generator = PushIDGenerator()
        var ids: [String] = []
        for _ in 0..<200 { ids.append(generator.next(nowMilliseconds: 99, using: &random)) }
        #expect(ids == ids.sorted())
        #expect(Set(ids).count == ids.count)
        // 200 increments cross at least two symbol boundaries, so a carry happened.
        #expect(Set(ids.map { $0.utf8.dropLast().last }).count > 1)
    }

    @Test(arguments: ["", "short", "-------0abcdefghijk!", "-------0abcdefghijklm"])
    func malformedIDsHaveNoTimestamp(_ id: String) {
        #expect(PushIDGenerator.timestamp(of: id) == nil)
    }

    @Test func sourceIsOrderedAcrossThreads() async {
        let source = PushIDSource(clock: FixedClock())
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<500).map { _ in source.next() } }
            }
            var all: [[String]] = []
            for await chunk in group { all.append(chunk) }
            return all
        }
        for chunk in ids { #expect(chunk == chunk.sorted()) }
        #expect(Set(ids.joined()).count == 2000)
    }
}

private struct MaxRandom: RandomNumberGenerator {
    mutating func next() -> UInt64 { .max }
}

private struct FixedClock: WallClock {
    func nowMilliseconds() -> Int64 { 1_700_000_000_000 }
}
