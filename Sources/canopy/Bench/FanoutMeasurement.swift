// FanoutMeasurement -- the fan-out benchmark's payload, its in-flight window, and delivery latency statistics.

import CanopyCore

/// The write payload `{"seq":i,"sentAt":<monotonic ns>,"text":"hello"}` and a scanner that finds its numbers.
enum FanoutPayload {
    /// The payload's JSON text for write `seq`, stamped `sentAt` (monotonic nanoseconds); `text` pads it (it must
    /// not contain a quote, a backslash or the keys).
    static func json(seq: Int, sentAt: UInt64, text: String = "hello") -> String {
        #"{"seq":\#(seq),"sentAt":\#(sentAt),"text":"\#(text)"}"#
    }

    private static let seqKey = Array(#""seq":"#.utf8)
    private static let sentAtKey = Array(#""sentAt":"#.utf8)

    /// Finds `"seq":<n>` and `"sentAt":<n>` in a delivered message, in either order (the daemon sorts keys);
    /// nil when the message has no payload.
    static func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> (seq: Int, sentAt: UInt64)? {
        guard let seq = number(after: seqKey, in: bytes), let sentAt = number(after: sentAtKey, in: bytes) else {
            return nil
        }
        return (Int(seq), sentAt)
    }

    /// Scans a delivered text message (see ``scan(_:)``).
    static func scan(_ text: String) -> (seq: Int, sentAt: UInt64)? {
        var text = text
        return text.withUTF8 { scan($0) }
    }

    /// The decimal number right after the last occurrence of `key`. The payload is the last object of a Firebase
    /// push and the whole last element of a RESP message, so searching from the end costs the payload's few dozen
    /// bytes for either server, not the length of the Firebase envelope in front of it.
    private static func number(after key: [UInt8], in bytes: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard bytes.count > key.count, let lastByte = key.last else { return nil }
        var keyEnd = bytes.count - 1
        while keyEnd >= key.count - 1 {
            defer { keyEnd -= 1 }
            guard bytes[keyEnd] == lastByte else { continue }
            let keyStart = keyEnd - (key.count - 1)
            var k = 0
            while k < key.count - 1 && bytes[keyStart + k] == key[k] { k += 1 }
            guard k == key.count - 1 else { continue }
            return decimal(in: bytes, from: keyEnd + 1)?.value
        }
        return nil
    }

    /// The unsigned decimal (at most 18 digits) starting at `from`, and the index after it; nil without a digit.
    static func decimal(in bytes: UnsafeBufferPointer<UInt8>, from: Int) -> (value: UInt64, end: Int)? {
        var i = from
        var value: UInt64 = 0
        while i < bytes.count, i - from < 18, bytes[i] >= 0x30, bytes[i] <= 0x39 {
            value = value * 10 + UInt64(bytes[i] - 0x30)
            i += 1
        }
        return i > from ? (value, i) : nil
    }
}

/// Counts deliveries per write, bounds the writes in flight, and records latencies. Loop-confined.
final class FanoutTracker {
    let writes: Int
    let deliveriesPerWrite: Int
    /// Writes sent but not yet delivered to every expected subscriber, at most.
    let window: Int
    private(set) var sent = 0
    private(set) var completed = 0
    private(set) var delivered = 0
    /// Deliveries of an unknown or already complete write (should stay 0).
    private(set) var unexpected = 0
    /// With per-subscriber accounting: deliveries that were not the subscriber's next write (a repeat, or one after
    /// a gap); they are not counted as delivered. Should stay 0.
    private(set) var outOfOrder = 0
    private var remaining: [Int32]
    /// Per subscriber, the last write it got in order (-1: none yet); empty without per-subscriber accounting.
    private var lastInOrder: [Int32]
    private(set) var latenciesNs: [UInt64] = []
    private(set) var firstSendNs: UInt64 = 0
    private(set) var lastDeliveryNs: UInt64 = 0

    /// - Parameters:
    ///   - writes: how many writes the round sends.
    ///   - deliveriesPerWrite: subscribers that receive each write.
    ///   - maxEventsInFlight: the window, in expected deliveries (at least one write is always allowed).
    ///   - orderedSubscribers: when every one of this many subscribers gets every write, each in write order, the
    ///     deliveries are checked per subscriber (see ``outOfOrder``); nil to count them per write only.
    init(writes: Int, deliveriesPerWrite: Int, maxEventsInFlight: Int, orderedSubscribers: Int? = nil) {
        precondition(writes > 0 && deliveriesPerWrite > 0)
        precondition(orderedSubscribers.map { $0 == deliveriesPerWrite } ?? true)
        lastInOrder = Array(repeating: -1, count: orderedSubscribers ?? 0)
        self.writes = writes
        self.deliveriesPerWrite = deliveriesPerWrite
        window = max(1, maxEventsInFlight / deliveriesPerWrite)
        remaining = Array(repeating: Int32(deliveriesPerWrite), count: writes)
        latenciesNs.reserveCapacity(writes * deliveriesPerWrite)
    }

    var canSend: Bool { sent < writes && sent - completed < window }
    var isDone: Bool { completed == writes }

    /// Claims the next write number and stamps its send time.
    func nextWrite() -> (seq: Int, sentAt: UInt64) {
        precondition(canSend)
        let now = monotonicNanoseconds()
        if sent == 0 { firstSendNs = now }
        sent += 1
        return (sent - 1, now)
    }

    /// Records one delivery to `subscriber` (its index, used with per-subscriber accounting); returns true when it
    /// completed its write (so the writer may send more).
    func record(seq: Int, sentAt: UInt64, subscriber: Int? = nil) -> Bool {
        let now = monotonicNanoseconds()
        guard seq >= 0, seq < sent, remaining[seq] > 0 else {
            unexpected += 1
            return false
        }
        if !lastInOrder.isEmpty, let subscriber {
            guard lastInOrder[subscriber] + 1 == Int32(seq) else {
                outOfOrder += 1
                return false
            }
            lastInOrder[subscriber] = Int32(seq)
        }
        delivered += 1
        latenciesNs.append(now &- sentAt)
        lastDeliveryNs = now
        remaining[seq] -= 1
        guard remaining[seq] == 0 else { return false }
        completed += 1
        return true
    }

    /// The round's figures (call when it has ended).
    func result(label: String, rssPerConnectionKiB: Double?, note: String?) -> FanoutResult {
        let sorted = latenciesNs.sorted()
        func ms(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1e6
        }
        let seconds = Double(lastDeliveryNs &- firstSendNs) / 1e9
        return FanoutResult(
            label: label, eventsPerSecond: seconds > 0 ? Double(delivered) / seconds : 0, p50: ms(0.5), p99: ms(0.99),
            max: sorted.last.map { Double($0) / 1e6 } ?? 0, rssPerConnectionKiB: rssPerConnectionKiB,
            delivered: delivered, expected: writes * deliveriesPerWrite, note: note)
    }
}

/// One row of the benchmark's table.
struct FanoutResult {
    var label: String
    var eventsPerSecond: Double
    var p50: Double
    var p99: Double
    var max: Double
    var rssPerConnectionKiB: Double?
    /// CPU time the server process spent per delivered event while writes ran (nil when it is not a child).
    var serverMicrosecondsPerEvent: Double?
    /// CPU time this benchmark process (writer and subscribers) spent per delivered event while writes ran.
    var clientMicrosecondsPerEvent: Double?
    /// The benchmark process's CPU time over the wall time while writes ran: 1.0 is one core kept busy.
    var clientCoreShare: Double?
    var delivered: Int
    var expected: Int
    var note: String?
}
