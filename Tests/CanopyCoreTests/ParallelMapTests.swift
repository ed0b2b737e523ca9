// ParallelMapTests -- `parallelMap` is `map`, in order, whether or not it splits the work; a `ConcurrentPart`
// runs beside its starter and hands back what it computed.

@testable import CanopyCore
import Dispatch
import Testing

@Suite struct ParallelMapTests {
    @Test(arguments: [0, 1, 7, 511, 512, 1023, 1024, 1025, 4099])
    func itIsMapInOrder(count: Int) {
        let items = Array(0..<count)
        #expect(items.parallelMap(minimumPerChunk: 512) { $0 * 3 + 1 } == items.map { $0 * 3 + 1 })
        // Chunks of uneven work still come back in order.
        let strings = items.map { String(repeating: "x", count: $0 % 97) }
        #expect(strings.parallelMap(minimumPerChunk: 100) { $0.count } == strings.map(\.count))
    }

    @Test func chunksJoinInTheirOrderWhateverOrderTheyFinishIn() {
        // This machine has 2 cores, so `parallelMap` makes at most 2 chunks: 3 and more are joined here directly.
        let results = ParallelMap.Results<String>(chunks: 4)
        results.store(2, ["e"])
        results.store(0, ["a", "b"])
        results.store(3, [])
        results.store(1, ["c", "d"])
        #expect(results.joined() == ["a", "b", "c", "d", "e"])
        #expect(ParallelMap.Results<Int>(chunks: 1).joined().isEmpty)
    }

    @Test func aConcurrentPartRunsBesideItsStarterAndReturnsItsValue() {
        // The part waits for a gate its starter opens only after starting it: run inline, it would time out.
        let gate = DispatchSemaphore(value: 0)
        let part = ConcurrentPart { () -> [Int] in
            guard gate.wait(timeout: .now() + 10) == .success else { return [] }
            return (1...5).map { $0 * $0 }
        }
        gate.signal()
        #expect(part.value() == [1, 4, 9, 16, 25])
    }
}
