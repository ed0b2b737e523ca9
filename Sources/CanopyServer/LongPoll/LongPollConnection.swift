// LongPollConnection -- one long-poll session's transport: client messages arrive in polls, server messages leave
// as the answer to the poll the server is holding.
//
// The server holds at most one poll per session. A new request releases the one held before (answered with
// whatever is queued, or empty) and is held in its place, so the SDK always has exactly one poll waiting while
// idle and a second one only while it has data to send. Messages queued during one loop pass leave together in
// one answer. A held poll is answered empty after `pollHoldMilliseconds`; a session that sends no request for
// `idleTimeoutMilliseconds` is ended by its endpoint, which runs its onDisconnect operations.

import CanopyCore
import CanopyNet

/// A `WireTransport` over long polling. Loop-confined.
final class LongPollConnection: WireTransport {
    let id: String
    let password: String
    let callbackID: String?
    let namespaceName: String
    private let loop: EventLoop
    private let limits: LongPollLimits
    private let clock: any WallClock
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
    /// Complete server messages (JSON texts) not yet handed to a poll.
    private var outbox: [String] = []
    private var outboxBytes = 0
    private var held: HTTPResponder?
    private var holdTimer: TimerHandle?
    private var flushTimer: TimerHandle?
    private var nextResponseNumber = 0
    /// Wall-clock time of the last request, for the idle timeout.
    private(set) var lastRequestAt: Int64
    private(set) var isClosed = false
    /// Handed over to another transport: the next poll gets what is queued and the `close` command.
    private var retiring = false

    init(
        id: String, password: String, callbackID: String?, namespaceName: String, loop: EventLoop,
        limits: LongPollLimits, clock: any WallClock
    ) {
        self.id = id
        self.password = password
        self.callbackID = callbackID
        self.namespaceName = namespaceName
        self.loop = loop
        self.limits = limits
        self.clock = clock
        self.reassembler = LongPollReassembler(limits: limits)
        self.lastRequestAt = clock.nowMilliseconds()
    }

    /// Whether `candidate` is this session's password, compared in time independent of where they differ.
    func accepts(password candidate: String) -> Bool {
        constantTimeEqual(candidate, password)
    }

    // MARK: - requests

    /// The answer to the `start` request: the start command plus everything queued so far (the handshake).
    func startResponseBody() -> [UInt8] {
        LongPollScript.start(
            callbackID: callbackID, id: id, password: password, data: takeOutboxAsResponse())
    }

    /// A poll arrived: deliver its segments, release the poll held before, and hold this one.
    /// - Throws: when the segments break the protocol or a limit; the caller answers the error and ends the session.
    func received(_ segments: [LongPollSegment], responder: HTTPResponder) throws(LongPollError) {
        lastRequestAt = clock.nowMilliseconds()
        if retiring {
            if held != nil { releaseHeldPoll() }
            held = responder
            finish()
            return
        }
        for segment in segments {
            for message in try reassembler.add(segment) {
                guard !isClosed else { break }
                onText?(message)
            }
        }
        guard !isClosed else {
            responder.respond(
                Self.response(LongPollScript.close(callbackID: callbackID, lastNumber: nil)))
            return
        }
        if held != nil { releaseHeldPoll() }
        held = responder
        holdTimer = loop.schedule(afterMilliseconds: limits.pollHoldMilliseconds) { [weak self] in
            self?.releaseHeldPoll()
        }
        if !outbox.isEmpty { scheduleFlush() }
    }

    // MARK: - WireTransport

    /// Queues one whole message of the session's output (a poll answer carries whole messages: `WireSession`
    /// sends `WireMessages`, whose `texts` this transport takes, never counted pieces).
    func send(text: String) {
        guard !isClosed else { return }
        enqueue(text)
    }

    /// The session ends itself (a malformed message): the client is told to close, and the session's
    /// `onClose` still runs afterwards, so its onDisconnect operations apply as for any lost connection.
    func close(code: UInt16, reason: String) {
        logger.debug("lp.closed_by_session", ["code": String(code), "reason": reason])
        finish()
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
        retiring = true
        if held != nil { finish() }
    }

    /// Ends the session from the server's or the client's side (idle timeout, `disconn`, a limit, a protocol
    /// error) and notifies `onClose`.
    func terminate() {
        guard !isClosed else { return }
        finish()
        let callback = onClose
        onClose = nil
        callback?()
    }

    // MARK: - output

    private func enqueue(_ message: String) {
        outbox.append(message)
        outboxBytes += message.utf8.count
        guard outboxBytes <= limits.maxOutboxBytes else {
            logger.warning("lp.outbox_overflow", ["id": id, "bytes": String(outboxBytes)])
            terminate()
            return
        }
        scheduleFlush()
    }

    /// Answers the held poll at the next loop pass, so all messages of this pass leave together.
    private func scheduleFlush() {
        guard held != nil, flushTimer == nil else { return }
        flushTimer = loop.schedule(afterMilliseconds: 0) { [weak self] in
            guard let self else { return }
            self.flushTimer = nil
            if !self.outbox.isEmpty { self.releaseHeldPoll() }
        }
    }

    /// Answers the held poll with the queued messages (or empty). A poll whose connection is already gone is
    /// dropped without taking the messages, which wait for the next poll.
    private func releaseHeldPoll() {
        holdTimer?.cancel()
        holdTimer = nil
        guard let responder = held else { return }
        held = nil
        guard !responder.isClosed else {
            responder.respond(Self.response([]))  // dropped by the responder; keeps its bookkeeping simple
            return
        }
        responder.respond(Self.response(takeOutboxAsResponse()))
    }

    /// The queued messages as the next numbered data response; empty (and unnumbered) when nothing is queued.
    private func takeOutboxAsResponse() -> [UInt8] {
        guard !outbox.isEmpty else { return [] }
        let body = LongPollScript.data(
            callbackID: callbackID, number: nextResponseNumber, messages: outbox)
        nextResponseNumber += 1
        outbox = []
        outboxBytes = 0
        return body
    }

    /// Marks the session closed and answers a held poll with what is queued plus the `close` command.
    private func finish() {
        guard !isClosed else { return }
        isClosed = true
        holdTimer?.cancel()
        holdTimer = nil
        flushTimer?.cancel()
        flushTimer = nil
        if let responder = held {
            held = nil
            var body = takeOutboxAsResponse()
            let last = nextResponseNumber > 0 ? nextResponseNumber - 1 : nil
            body += LongPollScript.close(callbackID: callbackID, lastNumber: last)
            responder.respond(Self.response(body))
        }
        onText = nil
        upgrade?.abandon()
        upgrade = nil
        let finished = onFinished
        onFinished = nil
        finished?(self)
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
