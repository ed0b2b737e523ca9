// LongPollReassembler -- puts a long-poll client's numbered segments back together into whole messages, in order.
//
// Segments are numbered consecutively across the session; a message is the run of `ts` segments starting at the
// next expected number. Polls may arrive out of order (the SDK keeps two open), so a segment ahead of the next
// expected one waits, within a bounded window and a bounded number of characters; segments ahead of a gap (out of
// order) have a much smaller bound of their own, since the SDK only ever has a few. A segment that was already
// consumed, or an exact repeat of one waiting, is ignored (a retried request); a different segment under a number
// already waiting is an error. Every segment is looked at a constant number of times: linear in the input.

import CanopyCore

/// Reassembles segments into message texts. A value type with no I/O: feed it segments, take messages.
struct LongPollReassembler {
    let limits: LongPollLimits
    /// The number of the first segment of the next message.
    private(set) var nextSegment = 0
    /// Every segment in `nextSegment..<readyThrough` has arrived.
    private var readyThrough = 0
    private var waiting: [Int: LongPollSegment] = [:]
    /// Data characters held in `waiting`.
    private(set) var waitingCharacters = 0
    /// Data characters of the waiting segments past `readyThrough` (ahead of a gap).
    private(set) var outOfOrderCharacters = 0

    init(limits: LongPollLimits) {
        self.limits = limits
    }

    /// Segments received but not yet part of a delivered message.
    var waitingCount: Int { waiting.count }

    /// Adds one segment; returns the messages it completed (JSON texts, decoded from base64), oldest first.
    mutating func add(_ segment: LongPollSegment) throws(LongPollError) -> [String] {
        guard segment.number >= nextSegment else { return [] }  // a repeat of a consumed segment
        if let existing = waiting[segment.number] {
            guard existing == segment else {
                throw .badRequest("Segment \(segment.number) was received twice with different contents.")
            }
            return []
        }
        guard segment.number - nextSegment < limits.maxSegmentWindow else {
            throw .limit("Segment \(segment.number) is too far ahead of segment \(nextSegment).")
        }
        let characters = segment.data.utf8.count
        guard waitingCharacters + characters <= limits.maxPendingCharacters else {
            throw .limit("More than \(limits.maxPendingCharacters) characters of unassembled segments.")
        }
        if segment.number > readyThrough {
            guard outOfOrderCharacters + characters <= limits.maxOutOfOrderCharacters else {
                throw .limit("More than \(limits.maxOutOfOrderCharacters) characters of segments out of order.")
            }
            outOfOrderCharacters += characters
        }
        waiting[segment.number] = segment
        waitingCharacters += characters
        if segment.number == readyThrough {
            readyThrough += 1
            // The gap closed: the segments that waited behind it are in order now.
            while let next = waiting[readyThrough] {
                outOfOrderCharacters -= next.data.utf8.count
                readyThrough += 1
            }
        }

        var messages: [String] = []
        while let first = waiting[nextSegment], nextSegment + first.total <= readyThrough {
            var text = ""
            for number in nextSegment..<(nextSegment + first.total) {
                let piece = waiting.removeValue(forKey: number)!
                guard piece.total == first.total else {
                    throw .badRequest(
                        "Segments \(nextSegment) and \(number) disagree on their message's length.")
                }
                waitingCharacters -= piece.data.utf8.count
                text += piece.data
            }
            nextSegment += first.total
            messages.append(try Self.decode(text, firstSegment: nextSegment - first.total))
        }
        return messages
    }

    /// Decodes a whole message: web-safe base64 with `.` as padding, then UTF-8.
    static func decode(_ text: String, firstSegment: Int) throws(LongPollError) -> String {
        var symbols = Substring(text)
        while symbols.hasSuffix(".") { symbols = symbols.dropLast() }
        guard text.utf8.count - symbols.utf8.count <= 2, !symbols.contains("."),
            let bytes = Base64.decode(symbols, url: true),
            let message = String(validating: bytes, as: UTF8.self)
        else {
            throw .badRequest(
                "The message starting at segment \(firstSegment) is not valid base64 UTF-8 text.")
        }
        return message
    }
}
