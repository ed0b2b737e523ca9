// LongPollReassemblerTests -- segment reassembly: order, repeats, limits and decoding, without any server.

import CanopyCore
import Testing

@testable import CanopyServer

@Suite struct LongPollReassemblerTests {
    /// `text` as the SDK sends it: web-safe base64 with `.` padding, cut into `size`-character segments
    /// numbered from `first`.
    static func segments(_ text: String, size: Int, first: Int = 0) -> [LongPollSegment] {
        let base64 = Base64.encode(Array(text.utf8), url: true, padding: true).replacingOccurrences(
            of: "=", with: ".")
        var pieces: [String] = []
        var rest = Substring(base64)
        while !rest.isEmpty {
            pieces.append(String(rest.prefix(size)))
            rest = rest.dropFirst(size)
        }
        return pieces.enumerated().map {
            LongPollSegment(number: first + $0.offset, total: pieces.count, data: $0.element)
        }
    }

    @Test func inOrderSegmentsMakeOneMessage() throws {
        var reassembler = LongPollReassembler(limits: LongPollLimits())
        let parts = Self.segments(#"{"t":"d","d":{"r":1,"a":"s","b":{}}}"#, size: 7)
        #expect(parts.count > 3)
        var out: [String] = []
        for part in parts { out += try reassembler.add(part) }
        #expect(out == [#"{"t":"d","d":{"r":1,"a":"s","b":{}}}"#])
        #expect(reassembler.nextSegment == parts.count)
        #expect(reassembler.waitingCount == 0)
        #expect(reassembler.waitingCharacters == 0)
    }

    @Test(arguments: [[2, 0, 1], [1, 2, 0], [2, 1, 0]])
    func outOfOrderSegmentsWaitForTheirTurn(order: [Int]) throws {
        var reassembler = LongPollReassembler(limits: LongPollLimits())
        let first = Self.segments("first message é", size: 8)
        #expect(first.count == 3)
        let second = Self.segments("second", size: 100, first: 3)
        var out: [String] = try reassembler.add(second[0])  // the next message before this one: waits
        for index in order { out += try reassembler.add(first[index]) }
        #expect(out == ["first message é", "second"])
    }

    @Test func repeatsAreIgnoredButConflictsAreErrors() throws {
        var reassembler = LongPollReassembler(limits: LongPollLimits())
        let parts = Self.segments("hello world", size: 4)
        #expect(try reassembler.add(parts[1]).isEmpty)
        #expect(try reassembler.add(parts[1]).isEmpty)  // an exact repeat while waiting
        var changed = parts[1]
        changed.data = "AAAA"
        #expect(throws: LongPollError.self) { try reassembler.add(changed) }
        var out: [String] = []
        for part in parts { out += try reassembler.add(part) }
        #expect(out == ["hello world"])
        #expect(try reassembler.add(parts[0]).isEmpty)  // a repeat of a consumed segment
    }

    @Test func segmentsMustAgreeOnTheirMessageLength() throws {
        var reassembler = LongPollReassembler(limits: LongPollLimits())
        #expect(try reassembler.add(LongPollSegment(number: 1, total: 3, data: "AAAA")).isEmpty)
        #expect(throws: LongPollError.self) {
            try reassembler.add(LongPollSegment(number: 0, total: 2, data: "AAAA"))
        }
    }

    @Test func limitsBoundWhatMayWait() throws {
        var limits = LongPollLimits()
        limits.maxSegmentWindow = 10
        limits.maxPendingCharacters = 8
        var reassembler = LongPollReassembler(limits: limits)
        #expect(throws: LongPollError.limit("Segment 10 is too far ahead of segment 0.")) {
            try reassembler.add(LongPollSegment(number: 10, total: 1, data: "e30."))
        }
        #expect(try reassembler.add(LongPollSegment(number: 5, total: 9, data: "AAAAAAAA")).isEmpty)
        #expect(throws: LongPollError.self) {
            try reassembler.add(LongPollSegment(number: 6, total: 9, data: "A"))
        }
    }

    @Test func segmentsAheadOfAGapHaveASmallerBound() throws {
        var limits = LongPollLimits()
        limits.maxOutOfOrderCharacters = 8
        var reassembler = LongPollReassembler(limits: limits)
        // Segment 0 never comes: what waits behind the gap is bounded well below the pending-characters limit.
        #expect(try reassembler.add(LongPollSegment(number: 1, total: 9, data: "AAAA")).isEmpty)
        #expect(try reassembler.add(LongPollSegment(number: 3, total: 9, data: "AAAA")).isEmpty)
        #expect(reassembler.outOfOrderCharacters == 8)
        #expect(throws: LongPollError.limit("More than 8 characters of segments out of order.")) {
            try reassembler.add(LongPollSegment(number: 4, total: 9, data: "A"))
        }
        // Segment 0 arrives: 0 and 1 are in order, 3 still waits behind the gap at 2, which closes next.
        #expect(try reassembler.add(LongPollSegment(number: 0, total: 9, data: "AAAA")).isEmpty)
        #expect(reassembler.outOfOrderCharacters == 4)
        #expect(try reassembler.add(LongPollSegment(number: 2, total: 9, data: "AAAA")).isEmpty)
        #expect(reassembler.outOfOrderCharacters == 0)
        // In order, far more than the out-of-order bound may wait (a large message in many segments).
        for number in 4..<8 {
            #expect(try reassembler.add(LongPollSegment(number: number, total: 9, data: "AAAA")).isEmpty)
        }
        #expect(reassembler.waitingCharacters == 32)
        #expect(reassembler.outOfOrderCharacters == 0)
    }

    @Test(arguments: ["e30", "e30.", "e30=", "e3.0", "e30...", "_-_-", "////"])
    func decodingIsStrict(text: String) throws {
        let accepted = (try? LongPollReassembler.decode(text, firstSegment: 0)) != nil
        #expect(accepted == ["e30", "e30.", "e30="].contains(text))
        if accepted { #expect(try LongPollReassembler.decode(text, firstSegment: 0) == "{}") }
    }
}
