// HTTPConnectionStateMachine -- the phases of one HTTP connection: events in, actions out, no I/O.
//
//   open ──Connection: close / parse error / EOF with answers owed / shutdown──▶ draining
//   open / draining ──streaming response──▶ streaming ──stream ends──▶ streaming(closing) ──written──▶ closed
//   open / draining ──101 queued──▶ upgrading ──101 moved to output──▶ webSocket ──close frame queued──▶
//        webSocket(closing) ──written──▶ lingering
//   draining ──last answer moved to output──▶ closingAfterWrite ──written──▶ closed, or lingering (after an error,
//        so the client reads the error instead of a TCP reset)
//   lingering ──EOF or linger timeout──▶ closed
// One timer at a time guards the connection; which one follows from the phase, the pipeline and the parser
// (`timer(...)`), and what a timer does when it fires is `timerFired(...)`. `HTTPConnection` performs the effects.

/// The phase of an `HTTPConnection` and the decisions that follow from it. A value type, tested without sockets.
struct HTTPConnectionStateMachine {
    enum State: Equatable {
        /// Requests are read and parsed.
        case open
        /// No new requests; the answers in the pipeline are finished, then the connection closes.
        case draining(linger: Bool, peerClosed: Bool)
        /// A streaming (SSE) body is open; input is read only to notice the peer closing. `closing`: the stream
        /// ended and the connection closes once its output is written.
        case streaming(closing: Bool)
        /// A 101 is queued behind earlier answers; HTTP parsing has stopped and input is kept for the WebSocket.
        /// `closing`: the WebSocket already queued its close frame.
        case upgrading(peerClosed: Bool, closing: Bool)
        /// Frames flow both ways. `closing`: a close frame is queued; once written, the connection lingers.
        case webSocket(closing: Bool)
        /// The last answer is in the output buffer; once written, close (or linger first).
        case closingAfterWrite(linger: Bool, peerClosed: Bool)
        /// The write side is shut down; input is discarded until the peer closes or the linger timer fires.
        case lingering
        case closed
    }

    /// What to do with bytes read from the socket.
    enum InputAction: Equatable {
        case parse
        /// Keep them in the parser's buffer: they belong to the WebSocket once the 101 is written.
        case bufferForUpgrade
        case deliverToWebSocket
        case discard
    }

    /// What to do when the peer ends its side.
    enum EndOfInputAction: Equatable {
        case close
        /// Answer the requests already read (a half-close after sending them, as `nc -N` does), then close.
        case finishAnswers
    }

    /// What to do once every byte of output has been written.
    enum OutputWrittenAction: Equatable {
        case none
        case close
        /// Shut down the write side and keep reading (and discarding) for a moment.
        case linger
    }

    /// The timer that should guard the connection now.
    enum TimerKind: Equatable {
        case none
        /// Between requests (a fresh connection gets at most the head timeout for its first byte).
        case idle
        /// A request head has started and must finish (slowloris).
        case head
        /// A request body must make progress.
        case body
        case linger
        /// A WebSocket that has been silent for the idle timeout is told to go away.
        case webSocketIdle
    }

    /// What the connection does when its timer fires.
    enum TimerAction: Equatable {
        case none
        case close
        /// Answer 408 and close (lingering).
        case failRequestTimeout
        /// There was activity since the timer was armed: arm it again for the remainder.
        case rearm(milliseconds: Int64)
        /// Send a 1001 close frame; the connection closes once it is written.
        case terminateWebSocket
    }

    /// The parser's position, as far as timeouts care.
    enum ParserPhase: Equatable { case idle, head, body }

    private(set) var state = State.open
    private(set) var hasReadRequest = false
    /// A graceful shutdown began while a request was arriving: that request is read and answered, then no other.
    private(set) var isFinishingLastRequest = false
    /// Monotonic time of the last byte read or written.
    private(set) var lastActivity: UInt64

    init(now: UInt64) {
        lastActivity = now
    }

    // MARK: Queries

    var isClosed: Bool { state == .closed }
    /// True while requests are parsed; false once the connection is draining, streaming, upgraded or closing.
    var acceptsRequests: Bool { state == .open }
    var isStreaming: Bool {
        if case .streaming = state { return true }
        return false
    }
    /// Streams and WebSockets are closed when their backlog passes the hard limit; plain answers are not.
    var isSubjectToHardLimit: Bool {
        switch state {
        case .streaming, .webSocket: true
        default: false
        }
    }

    /// Whether the connection should hold read interest.
    /// - Parameters:
    ///   - isBackpressured: too many unanswered requests, or output above the soft limit.
    ///   - isWebSocketOpen: the WebSocket has not closed.
    ///   - isOverSoftLimit: unwritten output is above the soft limit.
    func wantsToRead(isBackpressured: Bool, isWebSocketOpen: Bool, isOverSoftLimit: Bool) -> Bool {
        switch state {
        case .open: !isBackpressured
        case .streaming, .lingering: true
        case .webSocket: isWebSocketOpen && !isOverSoftLimit
        case .draining, .upgrading, .closingAfterWrite, .closed: false
        }
    }

    /// The timer that should run now.
    func timer(isPipelineEmpty: Bool, hasPendingOutput: Bool, parser: ParserPhase) -> TimerKind {
        switch state {
        case .closed: return .none
        case .lingering: return .linger
        case .webSocket: return .webSocketIdle
        case .streaming: return .none
        case .open, .draining, .upgrading, .closingAfterWrite:
            if !isPipelineEmpty { return .none }
            if hasPendingOutput { return .idle }
            switch parser {
            case .idle: return .idle
            case .head: return .head
            case .body: return .body
            }
        }
    }

    /// How long `kind` runs when armed.
    func timeoutMilliseconds(_ kind: TimerKind, limits: HTTPServerLimits) -> Int64? {
        switch kind {
        case .none: nil
        case .idle: hasReadRequest ? limits.idleTimeoutMs : min(limits.headerTimeoutMs, limits.idleTimeoutMs)
        case .head: limits.headerTimeoutMs
        case .body: limits.bodyTimeoutMs
        case .linger: limits.lingerTimeoutMs
        case .webSocketIdle: limits.idleTimeoutMs
        }
    }

    // MARK: Events

    /// A byte was read or written at `now`.
    mutating func activity(at now: UInt64) {
        lastActivity = now
    }

    /// Bytes arrived.
    func bytesReceived() -> InputAction {
        switch state {
        case .open: .parse
        case .upgrading: .bufferForUpgrade
        case .webSocket: .deliverToWebSocket
        case .draining, .streaming, .closingAfterWrite, .lingering, .closed: .discard
        }
    }

    /// The peer closed its side.
    mutating func endOfInput(hasUnansweredRequests: Bool) -> EndOfInputAction {
        guard hasUnansweredRequests else { return .close }
        switch state {
        case .open:
            state = .draining(linger: false, peerClosed: true)
        case .draining(let linger, false):
            state = .draining(linger: linger, peerClosed: true)
        case .upgrading(false, let closing):
            state = .upgrading(peerClosed: true, closing: closing)
        case .closingAfterWrite(let linger, false):
            state = .closingAfterWrite(linger: linger, peerClosed: true)
        case .draining, .upgrading, .closingAfterWrite, .streaming, .webSocket, .lingering, .closed:
            return .close
        }
        return .finishAnswers
    }

    /// A request was parsed; one without keep-alive is the last.
    mutating func requestParsed(keepAlive: Bool) {
        hasReadRequest = true
        if (!keepAlive || isFinishingLastRequest) && state == .open {
            state = .draining(linger: false, peerClosed: false)
        }
    }

    /// An error answer (a parse error, a request timeout) was queued: it is the last, and the connection lingers.
    mutating func requestFailed() {
        switch state {
        case .open: state = .draining(linger: true, peerClosed: false)
        case .draining(_, let peerClosed): state = .draining(linger: true, peerClosed: peerClosed)
        default: break
        }
    }

    /// A streaming response began.
    mutating func streamStarted() {
        guard !isClosed else { return }
        state = .streaming(closing: false)
    }

    /// A WebSocket upgrade was accepted; its 101 is queued.
    mutating func upgradeStarted() {
        switch state {
        case .open: state = .upgrading(peerClosed: false, closing: false)
        case .draining(_, let peerClosed): state = .upgrading(peerClosed: peerClosed, closing: false)
        default: break
        }
    }

    /// The 101 was moved to the output: input now belongs to the WebSocket.
    mutating func upgradeCompleted() {
        guard case .upgrading(_, let closing) = state else { return }
        state = .webSocket(closing: closing)
    }

    /// The WebSocket queued its close frame.
    mutating func webSocketClosing() {
        switch state {
        case .webSocket: state = .webSocket(closing: true)
        case .upgrading(let peerClosed, _): state = .upgrading(peerClosed: peerClosed, closing: true)
        default: break
        }
    }

    /// The pipeline is finished with what it has: `isLast` when the answer just moved to the output closes the
    /// connection (no keep-alive, the end of a stream), or when a draining connection has nothing left to answer.
    mutating func lastAnswerQueued() {
        switch state {
        case .open: state = .closingAfterWrite(linger: false, peerClosed: false)
        case .draining(let linger, let peerClosed): state = .closingAfterWrite(linger: linger, peerClosed: peerClosed)
        case .streaming: state = .streaming(closing: true)
        case .upgrading(let peerClosed, let closing):
            state = .closingAfterWrite(linger: closing, peerClosed: peerClosed)
        case .webSocket, .closingAfterWrite, .lingering, .closed: break
        }
    }

    /// Whether a pipeline that has run empty means the connection is done (it no longer reads requests and is
    /// not carrying a WebSocket).
    var closesWhenPipelineEmpty: Bool {
        switch state {
        case .open, .webSocket: false
        default: true
        }
    }

    /// Every byte of output has been written.
    mutating func outputWritten() -> OutputWrittenAction {
        switch state {
        case .closingAfterWrite(let linger, let peerClosed):
            guard linger, !peerClosed else { return .close }
            state = .lingering
            return .linger
        case .streaming(closing: true):
            return .close
        case .webSocket(closing: true):
            state = .lingering
            return .linger
        default:
            return .none
        }
    }

    /// Graceful shutdown: stop reading requests. A request partly received (`midRequest`: its head or body is
    /// still arriving, an upload in flight) is read to its end and answered first; it is the last one.
    mutating func shutdownBegan(midRequest: Bool = false) {
        guard state == .open else { return }
        if midRequest {
            isFinishingLastRequest = true
        } else {
            state = .draining(linger: false, peerClosed: false)
        }
    }

    /// The socket was closed.
    mutating func closed() {
        state = .closed
    }

    /// The timer of `kind` fired at `now`.
    mutating func timerFired(_ kind: TimerKind, now: UInt64, limits: HTTPServerLimits) -> TimerAction {
        guard !isClosed else { return .none }
        switch kind {
        case .none: return .none
        case .idle, .linger: return .close
        case .head: return .failRequestTimeout
        case .body: return rearmIfActive(now: now, timeoutMs: limits.bodyTimeoutMs) ?? .failRequestTimeout
        case .webSocketIdle: return rearmIfActive(now: now, timeoutMs: limits.idleTimeoutMs) ?? .terminateWebSocket
        }
    }

    /// Inactivity timers are not reset on every read; one that fires early relative to the last activity is
    /// re-armed for the remainder.
    private func rearmIfActive(now: UInt64, timeoutMs: Int64) -> TimerAction? {
        let idleFor = Int64((now - lastActivity) / 1_000_000)
        guard idleFor < timeoutMs else { return nil }
        return .rearm(milliseconds: timeoutMs - idleFor)
    }
}
