// LongPollSessionStateMachine -- the phases, held poll, outbox and idle clock of one long-poll session; no I/O.
//
//   active ──retire (WebSocket upgrade)──▶ retiring ──held or next poll answered with the `close` command──▶ closed
//   active ──terminate / close / outbox overflow──▶ closed
// At most one poll is held. A poll that arrives releases the one held before (with whatever is queued, or empty)
// and is held in its place; messages queued while a poll is held leave together at the next loop pass (a flush).
// The idle clock is the loop's monotonic clock: a session whose last request is `idleTimeoutMilliseconds` old is
// ended by its endpoint's sweep; one that never polled after its `start`, or that has not authenticated and holds
// no poll, much sooner (`firstPollTimeoutMilliseconds`, `unauthenticatedIdleTimeoutMilliseconds`), so sessions
// opened and abandoned by a flood of `start` requests go within seconds. `LongPollConnection` keeps the held responder and the timers and performs what
// these events return.

/// The state of a long-poll session, as a value: events in, answers and decisions out.
struct LongPollSessionStateMachine {
    enum Phase: Equatable {
        case active
        /// Handed over to another transport: the next answer carries what is queued and the `close` command.
        case retiring
        case closed
    }

    /// What to do with a poll that just arrived.
    enum PollArrival: Equatable {
        /// Deliver its segments to the session, then call ``holdArrivingPoll()``.
        case deliver
        /// The session is retiring: answer the held poll (if any) with `held`, answer the arriving one with
        /// `arriving` (what is queued plus `close`), and finish.
        case retire(held: [UInt8]?, arriving: [UInt8])
    }

    /// What queuing a message requires.
    enum EnqueueAction: Equatable {
        case none
        /// Answer the held poll at the next loop pass, so all messages of this pass leave together.
        case scheduleFlush
        /// The client stopped polling: its outbox passed the limit, and the session ends.
        case overflow
    }

    /// What ending the session requires.
    enum FinishAction: Equatable {
        case alreadyClosed
        /// Cancel the timers and notify; answer the held poll with `heldAnswer` (what is queued plus the `close`
        /// command) when one was held.
        case finished(heldAnswer: [UInt8]?)
    }

    /// What holding the arriving poll requires.
    enum HoldAction: Equatable {
        /// The session ended while its segments were delivered: answer the arriving poll with this `close` script.
        case answerArriving([UInt8])
        /// Hold it (arming the hold timer for `timeoutMilliseconds`) after answering the poll held before with
        /// `releasing`, if there was one; `flush` when queued messages should leave at the next pass.
        case hold(releasing: [UInt8]?, timeoutMilliseconds: Int64, flush: Bool)
    }

    let callbackID: String?
    let limits: LongPollLimits
    private(set) var phase = Phase.active
    /// A poll is held (its responder is kept by the connection).
    private(set) var isHoldingPoll = false
    private var isFlushScheduled = false
    /// Complete server messages (JSON texts) not yet handed to a poll.
    private var outbox: [String] = []
    private(set) var outboxBytes = 0
    private var nextResponseNumber = 0
    /// Monotonic time (nanoseconds) of the last request, for the idle timeout.
    private(set) var lastRequestAt: UInt64
    /// A poll (any request after `start`) has arrived.
    private(set) var hasPolled = false

    init(callbackID: String?, limits: LongPollLimits, now: UInt64) {
        self.callbackID = callbackID
        self.limits = limits
        self.lastRequestAt = now
    }

    var isClosed: Bool { phase == .closed }

    /// Whether the session should be ended for want of requests at `now`: its last request is at least the idle
    /// timeout old, or the first-poll timeout when it never polled. A session that has not authenticated and holds
    /// no poll whose connection is still open (`holdsLivePoll`) gets the unauthenticated idle timeout instead,
    /// counted from its last request or the last answer to one of its polls (`lastAnswerAt`), whichever is later:
    /// the SDK re-polls within milliseconds of an answer, so that gap never counts as quiet.
    func isIdle(now: UInt64, authenticated: Bool, holdsLivePoll: Bool, lastAnswerAt: UInt64 = 0) -> Bool {
        func quiet(since: UInt64, atLeast milliseconds: Int64) -> Bool {
            now >= since && (now - since) / 1_000_000 >= UInt64(max(0, milliseconds))
        }
        guard hasPolled else { return quiet(since: lastRequestAt, atLeast: limits.firstPollTimeoutMilliseconds) }
        if !authenticated && !holdsLivePoll {
            return quiet(
                since: max(lastRequestAt, lastAnswerAt), atLeast: limits.unauthenticatedIdleTimeoutMilliseconds)
        }
        return quiet(since: lastRequestAt, atLeast: limits.idleTimeoutMilliseconds)
    }

    // MARK: Events

    /// The answer to the `start` request: the start command plus everything queued so far (the handshake).
    mutating func startResponseBody(id: String, password: String) -> [UInt8] {
        LongPollScript.start(callbackID: callbackID, id: id, password: password, data: takeOutbox())
    }

    /// A poll arrived at `now`; `heldPollIsGone` when the poll held before has lost its connection.
    mutating func pollArrived(now: UInt64, heldPollIsGone: Bool) -> PollArrival {
        lastRequestAt = now
        hasPolled = true
        guard phase == .retiring else { return .deliver }
        let held = releaseHeldPoll(isGone: heldPollIsGone)
        isHoldingPoll = true
        guard case .finished(let arriving?) = finish() else { preconditionFailure("a held poll is answered") }
        return .retire(held: held, arriving: arriving)
    }

    /// The arriving poll's segments have been delivered; it is now held (unless the session ended meanwhile).
    mutating func holdArrivingPoll(heldPollIsGone: Bool) -> HoldAction {
        guard phase != .closed else {
            return .answerArriving(LongPollScript.close(callbackID: callbackID, lastNumber: nil))
        }
        let released = releaseHeldPoll(isGone: heldPollIsGone)
        isHoldingPoll = true
        return .hold(
            releasing: released, timeoutMilliseconds: limits.pollHoldMilliseconds, flush: scheduleFlushIfNeeded())
    }

    /// Queues one whole message of the session's output.
    mutating func enqueue(_ message: String) -> EnqueueAction {
        guard phase != .closed else { return .none }
        outbox.append(message)
        outboxBytes += message.utf8.count
        guard outboxBytes <= limits.maxOutboxBytes else { return .overflow }
        return scheduleFlushIfNeeded() ? .scheduleFlush : .none
    }

    /// The flush scheduled by ``enqueue(_:)`` runs: whether the held poll should be answered now.
    mutating func flushFired() -> Bool {
        isFlushScheduled = false
        return !outbox.isEmpty
    }

    /// The held poll is answered (hold timeout, a flush, a newer poll): its body, or nil when none is held. A poll
    /// whose connection `isGone` is answered empty (the responder drops it) and the messages wait for the next.
    mutating func releaseHeldPoll(isGone: Bool) -> [UInt8]? {
        guard isHoldingPoll else { return nil }
        isHoldingPoll = false
        return isGone ? [] : takeOutbox()
    }

    /// Hands the session to another transport. When a poll is held the session finishes at once (its answer
    /// carries what is queued plus `close`); otherwise the next poll carries it and `nil` is returned.
    mutating func retire() -> FinishAction? {
        guard phase == .active else { return .alreadyClosed }
        phase = .retiring
        guard isHoldingPoll else { return nil }
        return finish()
    }

    /// Ends the session.
    mutating func finish() -> FinishAction {
        guard phase != .closed else { return .alreadyClosed }
        phase = .closed
        isFlushScheduled = false
        guard isHoldingPoll else { return .finished(heldAnswer: nil) }
        isHoldingPoll = false
        var body = takeOutbox()
        let last = nextResponseNumber > 0 ? nextResponseNumber - 1 : nil
        body += LongPollScript.close(callbackID: callbackID, lastNumber: last)
        return .finished(heldAnswer: body)
    }

    // MARK: Internals

    private mutating func scheduleFlushIfNeeded() -> Bool {
        guard isHoldingPoll, !isFlushScheduled, !outbox.isEmpty else { return false }
        isFlushScheduled = true
        return true
    }

    /// The queued messages as the next numbered data response; empty (and unnumbered) when nothing is queued.
    private mutating func takeOutbox() -> [UInt8] {
        guard !outbox.isEmpty else { return [] }
        let body = LongPollScript.data(callbackID: callbackID, number: nextResponseNumber, messages: outbox)
        nextResponseNumber += 1
        outbox = []
        outboxBytes = 0
        return body
    }
}
