// JetStreamOrderedConsumer -- reads a stream in order from a sequence, surviving gaps, lost consumers, reconnects.
//
// An ordered consumer (ADR-17) is an ephemeral push consumer with no acknowledgements, one replica in memory,
// flow control and idle heartbeats, delivering to an inbox of this connection. Each delivery's reply subject is
// `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>` (9 tokens; 12 with a
// domain and account hash), so the client knows both sequences. The consumer sequence must grow by exactly one;
// when it does not or an idle heartbeat's `Nats-Last-Consumer` names a later one than arrived (a message lost),
// when no message or heartbeat came for three heartbeat intervals (the server holding the consumer died), when the
// connection was re-established, or when the local queue overflowed, the consumer is replaced by a new one starting
// right after the last stream sequence handed out. Messages before the sequence asked for are dropped: nats-server
// 2.9 may start a consumer early when it is created on a replica that lags (it clamps the start to that replica's
// last sequence; fixed in 2.11, nats-server#6253), which JetStreamClusterTests saw under load. So the reader sees
// every message of the stream from its start, each once, in stream order.
//
// Server messages: status 100 with a reply subject is a flow-control request (answered at once with an empty
// publish); status 100 without one is an idle heartbeat.

import CanopyCore
import Dispatch
import Foundation

/// One message read from a stream.
public struct JetStreamMessage: Sendable {
    public var subject: String
    public var streamSequence: UInt64
    /// Messages left in the stream after this one when it was sent (for "caught up" decisions).
    public var pending: UInt64
    public var headers: NATSHeaders?
    public var payload: [UInt8]
}

/// Where an ordered consumer starts.
public enum JetStreamDeliverStart: Sendable, Equatable {
    case all
    /// From this stream sequence on.
    case sequence(UInt64)
    /// The newest message of each subject, then every new one (KV watch).
    case lastPerSubject
    /// Only messages stored from now on.
    case new
}

/// Reads a stream (or the subjects matching a filter) in order. Read with ``next(timeout:)`` from one thread.
public final class JetStreamOrderedConsumer: @unchecked Sendable {
    // safe: the mutable fields are guarded by `condition`; `control` serializes the consumer's re-creations (API
    // calls must not run on the connection's reader thread, where deliveries arrive).
    public let stream: String
    public let filterSubject: String?
    private let js: JetStream
    private let start: JetStreamDeliverStart
    private let heartbeat: Duration
    private let capacity: Int
    private let condition = NSCondition()
    private let control = DispatchQueue(label: "canopy.nats.ordered")

    private var subscription: NATSSubscription?
    private var generation = 0
    private var expectedConsumerSequence: UInt64 = 1
    /// The last stream sequence handed to the queue.
    private var lastStreamSequence: UInt64 = 0
    /// The first stream sequence the current consumer may hand out: a server may start below the one asked for
    /// (2.9 clamps a start sequence to the stream's last sequence on a replica that lags: nats-server#6253).
    private var floor: UInt64 = 0
    private var delivered = false
    private var queue: [JetStreamMessage] = []
    private var head = 0
    private var lastActivity = Date()
    private var resetting = false
    private var stopped = false
    private var resets = 0
    private var lastErrorValue: (any Error)?
    /// What happened to the consumer lately (creations, their outcome, gaps, silences), newest last, for diagnosis.
    private var trail: [String] = []
    private let born = Date()

    /// Creates the consumer on the server and starts receiving.
    /// - Throws: the API's error when the first consumer cannot be created.
    public init(
        _ js: JetStream, stream: String, filterSubject: String? = nil, start: JetStreamDeliverStart = .all,
        heartbeat: Duration = .seconds(1), capacity: Int = 65_536
    ) throws {
        self.js = js
        self.stream = stream
        self.filterSubject = filterSubject
        self.start = start
        self.heartbeat = heartbeat
        self.capacity = capacity
        try create()
        js.connection.onReconnect { [weak self] in
            guard let self else { return }
            self.condition.locked { self.record("reconnected") }
            self.scheduleReset()
        }
    }

    deinit { stop() }

    /// How many times the server-side consumer was replaced.
    public var resetCount: Int { condition.locked { resets } }
    /// The last stream sequence handed out (0: none yet).
    public var lastSequence: UInt64 { condition.locked { lastStreamSequence } }
    /// The error of the last failed re-creation, if any (it is retried).
    public var lastError: (any Error)? { condition.locked { lastErrorValue } }
    /// The last 32 events of the consumer's life (creations and their outcome, gaps, silences, first deliveries),
    /// each with the milliseconds since it was made: what a test prints when a reader stalls.
    public var recentEvents: [String] { condition.locked { trail } }

    /// Called with `condition` held.
    private func record(_ event: String) {
        trail.append("\(Int(Date().timeIntervalSince(born) * 1000)) ms: \(event)")
        if trail.count > 32 { trail.removeFirst(trail.count - 32) }
    }

    /// The next message, waiting up to `timeout`; nil on timeout or after ``stop()``.
    public func next(timeout: Duration) -> JetStreamMessage? {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        return condition.locked {
            while head == queue.count && !stopped {
                checkLiveness()
                let tick = min(deadline, Date().addingTimeInterval(heartbeat.seconds))
                if !condition.wait(until: tick) && Date() >= deadline { break }
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

    /// Deletes nothing on the server (the ephemeral consumer goes once its interest is gone); stops delivery.
    public func stop() {
        let old: NATSSubscription? = condition.locked {
            stopped = true
            condition.broadcast()
            defer { subscription = nil }
            return subscription
        }
        old?.unsubscribe()
    }

    // MARK: Server-side consumer

    /// Creates a consumer, waiting `timeout` (nil: the JetStream's) for the API's answer.
    private func create(timeout: Duration? = nil) throws {
        let (generation, startAt): (Int, JetStreamDeliverStart) = condition.locked {
            self.generation += 1
            expectedConsumerSequence = 1
            lastActivity = Date()
            let startAt = delivered ? .sequence(lastStreamSequence + 1) : start
            if case .sequence(let sequence) = startAt { floor = sequence } else { floor = 0 }
            record("creating consumer \(self.generation) from \(startAt)")
            return (self.generation, startAt)
        }
        let inbox = js.connection.inboxPrefix + ".oc." + NATSConnection.randomToken()
        let subscription = try js.connection.subscribe(inbox) { [weak self] message in
            self?.receive(message, generation: generation)
        }
        var config: [JSONMember] = [
            JSONMember("deliver_subject", .string(inbox)), JSONMember("ack_policy", "none"),
            JSONMember("max_deliver", 1), JSONMember("replay_policy", "instant"),
            JSONMember("flow_control", true), JSONMember("idle_heartbeat", .int(heartbeat.nanoseconds)),
            JSONMember("mem_storage", true), JSONMember("num_replicas", 1),
        ]
        switch startAt {
        case .all: config.append(JSONMember("deliver_policy", "all"))
        case .new: config.append(JSONMember("deliver_policy", "new"))
        case .lastPerSubject: config.append(JSONMember("deliver_policy", "last_per_subject"))
        case .sequence(let sequence):
            config.append(JSONMember("deliver_policy", "by_start_sequence"))
            config.append(JSONMember("opt_start_seq", .int(Int64(max(1, sequence)))))
        }
        if let filterSubject { config.append(JSONMember("filter_subject", .string(filterSubject))) }
        let request: JSONValue = .object([
            JSONMember("stream_name", .string(stream)), JSONMember("config", .object(config)),
        ])
        do {
            _ = try js.call("CONSUMER.CREATE.\(stream)", request, timeout: timeout)
        } catch {
            condition.locked { record("consumer \(generation) not created: \(error)") }
            subscription.unsubscribe()
            throw error
        }
        let old: NATSSubscription? = condition.locked {
            record("consumer \(generation) created")
            // A gap seen while this was being created already started its replacement: keep the newer one.
            guard generation == self.generation else { return subscription }
            defer { self.subscription = subscription }
            return self.subscription
        }
        old?.unsubscribe()
    }

    /// Replaces the consumer on the control queue, retrying until it works or the consumer is stopped.
    ///
    /// An attempt waits 0.5 s for its answer at first, doubling up to the JetStream's timeout. After a node dies,
    /// nats-server 2.9 leaves some creates unanswered even once the new metadata and stream leaders are elected
    /// (seen in NATSFailoverTests: creates sent up to 6 s after both elections got no answer, then one
    /// succeeded; likely placed on the dead node, still a peer of the stream). With a short first wait such an
    /// attempt costs half a second, not the whole API timeout.
    private func scheduleReset() {
        let start: Bool = condition.locked {
            guard !resetting && !stopped else { return false }
            record("replacing consumer \(generation)")
            resetting = true
            generation += 1  // deliveries to the old consumer are ignored from now on
            return true
        }
        guard start else { return }
        control.async { [weak self] in
            var wait = 0.05
            var attempt = Duration.milliseconds(500)
            while let self {
                do {
                    try self.create(timeout: min(attempt, self.js.timeout))
                    self.condition.locked {
                        self.resetting = false
                        self.resets += 1
                    }
                    return
                } catch {
                    let stopped = self.condition.locked {
                        self.lastErrorValue = error
                        return self.stopped
                    }
                    if stopped { return }
                }
                attempt *= 2
                Thread.sleep(forTimeInterval: wait)
                wait = min(wait * 2, 1)
            }
        }
    }

    /// Called with `condition` held: a consumer silent for three heartbeats is presumed lost.
    private func checkLiveness() {
        guard !resetting, !stopped, Date().timeIntervalSince(lastActivity) > 3 * heartbeat.seconds else { return }
        record("consumer \(generation) silent for three heartbeats")
        condition.unlock()
        scheduleReset()
        condition.lock()
    }

    // MARK: Deliveries (on the connection's reader thread)

    private func receive(_ message: NATSMessage, generation: Int) {
        if message.status == 100 {
            // An idle heartbeat names the last consumer sequence the server sent: beyond ours, deliveries were
            // lost in transit and no later one would reveal it while the stream stays quiet.
            let lastSent = message.replyTo == nil ? message.headers?["Nats-Last-Consumer"].flatMap { UInt64($0) } : nil
            let gap: Bool = condition.locked {
                guard generation == self.generation, !stopped else { return false }
                lastActivity = Date()
                guard let lastSent, lastSent >= expectedConsumerSequence else { return false }
                record("consumer \(generation): heartbeat: \(lastSent) sent, \(expectedConsumerSequence - 1) arrived")
                return true
            }
            if let reply = message.replyTo { try? js.connection.publish(reply) }
            if let stalled = message.headers?["Nats-Consumer-Stalled"] { try? js.connection.publish(stalled) }
            if gap { scheduleReset() }
            return
        }
        guard message.status == nil, let reply = message.replyTo, let sequences = Self.sequences(ackSubject: reply)
        else { return }
        let gap: Bool = condition.locked {
            guard generation == self.generation, !stopped else { return false }
            lastActivity = Date()
            guard sequences.consumer == expectedConsumerSequence, queue.count - head < capacity else {
                record(
                    "consumer \(generation): sequence \(sequences.consumer) (stream \(sequences.stream)) where "
                        + "\(expectedConsumerSequence) was due, \(queue.count - head) queued")
                return true
            }
            expectedConsumerSequence += 1
            if expectedConsumerSequence == 2 { record("consumer \(generation) first sends stream \(sequences.stream)") }
            guard sequences.stream >= floor, !delivered || sequences.stream > lastStreamSequence else { return false }
            lastStreamSequence = sequences.stream
            delivered = true
            queue.append(
                JetStreamMessage(
                    subject: message.subject, streamSequence: sequences.stream, pending: sequences.pending,
                    headers: message.headers, payload: message.payload))
            condition.signal()
            return false
        }
        if gap { scheduleReset() }
    }

    /// The stream and consumer sequences and the pending count of a `$JS.ACK` reply subject.
    static func sequences(ackSubject: String) -> (stream: UInt64, consumer: UInt64, pending: UInt64)? {
        let tokens = ackSubject.split(separator: ".", omittingEmptySubsequences: false)
        guard tokens.count >= 9, tokens[0] == "$JS", tokens[1] == "ACK" else { return nil }
        // v1: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
        // v2: $JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>]
        let base = tokens.count == 9 ? 2 : 4
        guard tokens.count == 9 || tokens.count >= 11,
            let stream = UInt64(tokens[base + 3]), let consumer = UInt64(tokens[base + 4]),
            let pending = UInt64(tokens[base + 6])
        else { return nil }
        return (stream, consumer, pending)
    }
}
