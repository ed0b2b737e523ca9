// NATSSubscription -- one SUB of a connection: a handler, or a bounded queue read by a consumer thread.

import Foundation

/// A subscription. Messages go to its handler (on the reader thread) or, without one, into a queue of at most
/// `NATSOptions.maxPendingMessages` read with ``next(timeout:)``; past that, new messages are dropped and counted.
public final class NATSSubscription: @unchecked Sendable {
    // safe: `queue`, `dropped` and `finished` are guarded by `condition`; the rest is immutable.
    public let sid: UInt64
    public let subject: String
    public let queueGroup: String?
    private weak var connection: NATSConnection?
    private let handler: (@Sendable (NATSMessage) -> Void)?
    private let capacity: Int
    private let condition = NSCondition()
    private var queue: [NATSMessage] = []
    private var head = 0
    private var droppedCount = 0
    private var finished = false

    init(
        connection: NATSConnection, sid: UInt64, subject: String, queue: String?,
        handler: (@Sendable (NATSMessage) -> Void)?, capacity: Int
    ) {
        self.connection = connection
        self.sid = sid
        self.subject = subject
        self.queueGroup = queue
        self.handler = handler
        self.capacity = capacity
    }

    /// Messages dropped because the queue was full.
    public var dropped: Int { condition.locked { droppedCount } }

    /// Stops the subscription (UNSUB); a consumer waiting in ``next(timeout:)`` gets nil.
    public func unsubscribe() {
        if let connection { connection.unsubscribe(self) } else { finish() }
    }

    /// The next queued message, waiting up to `timeout`; nil on timeout or after ``unsubscribe()``.
    public func next(timeout: Duration) -> NATSMessage? {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        return condition.locked {
            while head == queue.count && !finished {
                guard condition.wait(until: deadline) else { break }
            }
            guard head < queue.count else { return nil }
            let message = queue[head]
            head += 1
            if head > 1024 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            return message
        }
    }

    func deliver(_ message: NATSMessage) {
        if let handler {
            handler(message)
            return
        }
        condition.locked {
            guard !finished else { return }
            guard queue.count - head < capacity else {
                droppedCount += 1
                return
            }
            queue.append(message)
            condition.signal()
        }
    }

    func finish() {
        condition.locked {
            finished = true
            condition.broadcast()
        }
    }
}
