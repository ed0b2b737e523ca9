// LongPollConnection -- one long-poll session's transport: client messages arrive in polls, server messages leave
// as the answer to the poll the server is holding.
//
// The server holds at most one poll per session. A new request releases the one held before (answered with
// whatever is queued, or empty) and is held in its place, so the SDK always has exactly one poll waiting while
// idle and a second one only while it has data to send. Messages queued during one loop pass leave together in
// one answer. A held poll is answered empty after `pollHoldMilliseconds`; a session that sends no request for
// `idleTimeoutMilliseconds` of the loop's clock is ended by its endpoint, which runs its onDisconnect operations.
// The decisions (phase, held poll, outbox, numbering, idleness) are `LongPollSessionStateMachine`'s; this class
// keeps the held responder and the timers and performs them.

import CanopyCore
import CanopyNet

/// A `WireTransport` over long polling. Loop-confined.
final class LongPollConnection: WireTransport {
    let id: String
    let password: String
    let namespaceName: String
    /// The client's address as sessions are counted (`LongPollEndpoint.addressKey`).
    let address: String
    /// The pending characters the endpoint has counted for this session in its budgets.
    var countedPendingCharacters = 0
    private let loop: EventLoop
    private let logger = Logger(label: "canopy.longpoll")

    var onText: ((String) -> Void)?
    var onClose: (() -> Void)?
    /// Called once when the session ends, for whatever reason (the endpoint forgets it).
    var onFinished: ((LongPollConnection) -> Void)?
    /// The session this transport carries.
    weak var session: WireSession?
    /// A WebSocket waiting to take the session over.
    var upgrade: LongPollUpgrade?

    private var reassembler: LongPollReassembler
    private var machine: LongPollSessionStateMachine
    /// The poll being held; the machine's `isHoldingPoll` says whether there is one.
    private var held: HTTPResponder?
    private var holdTimer: TimerHandle?
    private var flushTimer: TimerHandle?
    /// When a held poll was last answered (loop clock, nanoseconds), for the idle timeout.
    private var lastAnswerAt: UInt64 = 0

    init(
        id: String, password: String, callbackID: String?, namespaceName: String, address: String,
        loop: EventLoop, limits: LongPollLimits
    ) {
        self.id = id
        self.address = address
        self.password = password
        self.namespaceName = namespaceName
        self.loop = loop
        self.reassembler = LongPollReassembler(limits: limits)
        self.machine = LongPollSessionStateMachine(
            callbackID: callbackID, limits: limits, now: loop.clock.nowNanoseconds())
    }

    var callbackID: String? { machine.callbackID }
    var isClosed: Bool { machine.isClosed }

    /// Whether the session went quiet for longer than its idle timeout allows (on the loop's clock; see
    /// `LongPollSessionStateMachine.isIdle`).
    var isIdle: Bool {
        machine.isIdle(
            now: loop.clock.nowNanoseconds(), authenticated: session?.isAuthenticated ?? false,
            holdsLivePoll: machine.isHoldingPoll && held?.isClosed == false, lastAnswerAt: lastAnswerAt)
    }

    /// Characters of client segments received and not yet reassembled.
    var pendingCharacters: Int { reassembler.waitingCharacters }

    /// Whether `candidate` is this session's password, compared in time independent of where they differ.
    func accepts(password candidate: String) -> Bool {
        constantTimeEqual(candidate, password)
    }

    // MARK: - requests

    /// The answer to the `start` request: the start command plus everything queued so far (the handshake).
    func startResponseBody() -> [UInt8] {
        machine.startResponseBody(id: id, password: password)
    }

    /// A poll arrived: deliver its segments, release the poll held before, and hold this one.
    /// - Throws: when the segments break the protocol or a limit; the caller answers the error and ends the session.
    func received(_ segments: [LongPollSegment], responder: HTTPResponder) throws(LongPollError) {
        switch machine.pollArrived(now: loop.clock.nowNanoseconds(), heldPollIsGone: held?.isClosed ?? false) {
        case .retire(let heldAnswer, let arriving):
            answerHeld(heldAnswer)
            responder.respond(Self.response(arriving))
            finished()
            return
        case .deliver:
            break
        }
        for segment in segments {
            for message in try reassembler.add(segment) {
                guard !isClosed else { break }
                onText?(message)
            }
        }
        switch machine.holdArrivingPoll(heldPollIsGone: held?.isClosed ?? false) {
        case .answerArriving(let body):
            responder.respond(Self.response(body))
        case .hold(let releasing, let timeout, let flush):
            answerHeld(releasing)
            held = responder
            holdTimer = loop.schedule(afterMilliseconds: timeout) { [weak self] in self?.releaseHeldPoll() }
            if flush { scheduleFlush() }
        }
    }

    // MARK: - WireTransport

    /// Queues one whole message of the session's output (a poll answer carries whole messages: `WireSession`
    /// sends `WireMessages`, whose `texts` this transport takes, never counted pieces).
    func send(text: String) {
        switch machine.enqueue(text) {
        case .none:
            break
        case .scheduleFlush:
            scheduleFlush()
        case .overflow:
            logger.warning("lp.outbox_overflow", ["id": id, "bytes": String(machine.outboxBytes)])
            terminate()
        }
    }

    /// The session ends itself (a malformed message): the client is told to close, and the session's
    /// `onClose` still runs afterwards, so its onDisconnect operations apply as for any lost connection.
    func close(code: UInt16, reason: String) {
        logger.debug("lp.closed_by_session", ["code": String(code), "reason": reason])
        perform(machine.finish())
        let callback = onClose
        onClose = nil
        _ = loop.schedule(afterMilliseconds: 0) { callback?() }
    }

    /// Hands the session over to another transport (WebSocket upgrade): what is queued, ending with the `n`
    /// control message, goes out with the `close` command on the held poll, or else on the next poll. `onClose`
    /// does not fire: the session lives on.
    func retire() {
        guard !isClosed else { return }
        onClose = nil
        onText = nil
        upgrade = nil
        if let finish = machine.retire() { perform(finish) }
    }

    /// Ends the session from the server's or the client's side (idle timeout, `disconn`, a limit, a protocol
    /// error) and notifies `onClose`.
    func terminate() {
        guard !isClosed else { return }
        perform(machine.finish())
        let callback = onClose
        onClose = nil
        callback?()
    }

    // MARK: - output

    /// Answers the held poll at the next loop pass, so all messages of this pass leave together.
    private func scheduleFlush() {
        flushTimer = loop.schedule(afterMilliseconds: 0) { [weak self] in
            guard let self else { return }
            self.flushTimer = nil
            if self.machine.flushFired() { self.releaseHeldPoll() }
        }
    }

    /// Answers the held poll with the queued messages (or empty). A poll whose connection is already gone is
    /// dropped without taking the messages, which wait for the next poll.
    private func releaseHeldPoll() {
        answerHeld(machine.releaseHeldPoll(isGone: held?.isClosed ?? false))
    }

    /// Answers the held poll with `body` (nil: none is held) and cancels its timer.
    private func answerHeld(_ body: [UInt8]?) {
        holdTimer?.cancel()
        holdTimer = nil
        guard let body, let responder = held else { return }
        held = nil
        lastAnswerAt = loop.clock.nowNanoseconds()
        // A responder whose connection is gone drops the answer; responding keeps its bookkeeping simple.
        responder.respond(Self.response(body))
    }

    private func perform(_ finish: LongPollSessionStateMachine.FinishAction) {
        guard case .finished(let heldAnswer) = finish else { return }
        answerHeld(heldAnswer)
        finished()
    }

    /// The session is over: timers stop, the upgrade is abandoned and the endpoint forgets it.
    private func finished() {
        holdTimer?.cancel()
        holdTimer = nil
        flushTimer?.cancel()
        flushTimer = nil
        onText = nil
        upgrade?.abandon()
        upgrade = nil
        let callback = onFinished
        onFinished = nil
        callback?(self)
    }

    /// Headers of every long-poll answer: JavaScript, never cached.
    static let scriptHeaders: [(String, String)] = [
        ("Content-Type", "application/javascript; charset=utf-8"),
        ("Cache-Control", "no-cache, no-store, must-revalidate"), ("Pragma", "no-cache"),
        ("Expires", "0"),
        ("X-Content-Type-Options", "nosniff"),
    ]

    static func response(_ body: [UInt8], status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: scriptHeaders, body: body)
    }
}
