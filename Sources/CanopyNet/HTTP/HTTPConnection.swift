// HTTPConnection -- one accepted socket: reads and parses requests, keeps responses in order, batches output.
//
// The phases (open, draining, streaming, upgrading, WebSocket, closing, lingering) and every decision that
// follows from them live in `HTTPConnectionStateMachine`; this class performs the effects: socket reads and
// writes, parsing, interest changes and timers.
// Reading pauses (EPOLLIN interest dropped) while too many requests await answers or unwritten output is
// above the soft limit. Output is appended during the loop pass and written by the server's flush hook;
// EPOLLOUT interest is held only while output remains. One timer at a time guards the connection: idle
// (between requests), head (slowloris), body (no progress), linger, or WebSocket idle; all read the loop's clock.
// Bytes move through one seam, `transportRead` / `transportWrite`: the socket itself, or a `TLSSession` on it
// (Architecture.md#TLS). A TLS handshake runs inside the first reads, under the first-request timer.
//
// A request is shown to the handler by its head before its body is read (`refusalBeforeBody`), and its body is
// charged to the server's `BodyMemoryBudget` from then on: a refused or unaffordable body is answered at once and
// then read and dropped (closed instead after `Expect: 100-continue`), never buffered. The backlog of a streaming
// connection is reported to the server, which holds all of them under one output budget.
import CCanopyLinux
import CanopyCore

#if canImport(Glibc)
    import Glibc
#endif

/// A reference to a connection that knows whether the connection still exists, for what may outlive it (a
/// responder or stream a handler keeps, a timer's work).
///
/// It replaces weak references to the connection. The first weak reference to an object gives it a side table,
/// and from then on every retain and release of that object takes the runtime's slow path: with a responder and a
/// timer holding each connection weakly, that was about 3 % of the daemon's samples in a fan-out to 10,000
/// listeners (`incrementSlow`/`doDecrementSlow` under `HTTPServer.markDirty` and `flushDirtyConnections`; 0.7 %
/// after, `perf record` at 4,999 Hz, 2026-12-06).
/// The connection owns its link and clears `isAlive` in its `deinit`, before the memory goes; loop-confined.
final class ConnectionLink {
    unowned(unsafe) let connection: HTTPConnection
    fileprivate(set) var isAlive = true

    fileprivate init(_ connection: HTTPConnection) { self.connection = connection }

    /// The connection, or nil once it is gone.
    var target: HTTPConnection? { isAlive ? connection : nil }
}

final class HTTPConnection {
    private typealias TimerKind = HTTPConnectionStateMachine.TimerKind

    let id: Int
    let fd: Int32
    let remoteAddress: String
    let loop: EventLoop
    private weak var server: HTTPServer?
    private let limits: HTTPServerLimits
    private var parser: HTTPRequestParser
    private var output: [UInt8] = []
    private var outputOffset = 0
    private var pipeline: [PipelineEntry] = []
    /// The current request body's share of the server's body budget (moved into the request once complete).
    private var bodyCharge: BodyCharge?
    /// The current request was answered from its head: its body is being read and dropped.
    private var isDroppingBody = false

    private var machine: HTTPConnectionStateMachine
    /// The WebSocket frames go to once the 101 is written (the machine is then in its `webSocket` phase).
    private var webSocket: WebSocketConnection?
    /// Whether the connection was upgraded to a WebSocket (metrics).
    var isWebSocket: Bool { webSocket != nil }
    var isDirty = false
    /// A WebSocket whose first output of this pass answers a request (`WebSocketConnection.sendAnswer`): flushed
    /// with the answers, before the WebSockets that carry events (`FlushOrder`).
    var isAnswering = false

    /// The interest last registered with the loop (readable, writable), so unchanged interest costs no lookup.
    private var registeredInterest = (readable: true, writable: false)
    private var timer: TimerHandle?
    private var timerKind = TimerKind.none
    /// What responders, streams and timers hold instead of a weak reference (see `ConnectionLink`).
    private(set) lazy var link = ConnectionLink(self)

    /// The TLS session on `fd` (nil: plaintext).
    private var tls: TLSSession?
    /// TLS stopped a read because it must write first (handshake flight, key update): wait for writability.
    private var readWantsWrite = false
    /// TLS stopped a write because it must read first: wait for input, then write again.
    private var writeWantsRead = false

    init(
        id: Int, fd: Int32, remoteAddress: String, loop: EventLoop, server: HTTPServer, limits: HTTPServerLimits,
        tls: TLSSession? = nil
    ) {
        self.tls = tls
        self.id = id
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.loop = loop
        self.server = server
        self.limits = limits
        self.parser = HTTPRequestParser(limits: limits.parserLimits, reportsHeads: true)
        self.machine = HTTPConnectionStateMachine(now: loop.clock.nowNanoseconds())
    }

    var isClosed: Bool { machine.isClosed }

    deinit {
        link.isAlive = false
        // A WebSocket holds its connection unowned and touches it only while open: it must learn the connection
        // is gone even on paths that never called `close()`.
        webSocket?.markClosed(notify: false)
        for entry in pipeline {
            if case .upgrade(let upgraded, _) = entry.state { upgraded.markClosed(notify: false) }
        }
    }

    /// Registers with the loop and arms the first-request timer.
    func start() throws(NetError) {
        try loop.register(fd: fd, readable: true, writable: false) { [unowned self] events in
            self.handle(events)
        }
        machine.activity(at: loop.clock.nowNanoseconds())
        updateTimer()
    }

    var pendingOutputBytes: Int { output.count - outputOffset }

    /// The server's budget for request bodies, which WebSocket messages being received share.
    var bodyBudget: BodyMemoryBudget? { server?.bodyBudget }

    /// Unwritten output of a stream or WebSocket (0 for plain responses), as last reported to the server.
    var reportedBacklog = 0

    // MARK: Events

    private func handle(_ events: IOEvents) {
        if events.isWritable || (events.isReadable && writeWantsRead) {
            writeWantsRead = false
            writeOutput()
        }
        guard !isClosed else { return }
        if events.isReadable || (events.isWritable && readWantsWrite) {
            readWantsWrite = false
            readOnce()
        } else if events.isHangup {
            close()
        }
    }

    private func readOnce() {
        let result = transportRead()
        switch result {
        case .transferred(let count):
            machine.activity(at: loop.clock.nowNanoseconds())
            let bytes = UnsafeRawBufferPointer(rebasing: loop.readBuffer[0..<count])
            switch machine.bytesReceived() {
            case .discard:
                // Lingering, streaming or draining: input is only read to notice the peer closing.
                return
            case .deliverToWebSocket:
                webSocket?.receive(bytes)
                updateInterest()
            case .bufferForUpgrade:
                parser.append(bytes)
            case .parse:
                parser.append(bytes)
                processInput()
            }
        case .wouldBlock:
            if tls?.wantsWritable == true {
                readWantsWrite = true
                updateInterest()
            }
            return
        case .endOfFile:
            switch machine.endOfInput(hasUnansweredRequests: !pipeline.isEmpty) {
            case .close:
                close()
            case .finishAnswers:
                // Half-close after sending requests (`nc -N`, `curl` with `--no-keepalive`): answer, then close.
                updateInterest()
                updateTimer()
            }
        case .failed:
            if let tls, tls.sawPlaintext {
                refusePlaintext()
            } else {
                close()
            }
        }
    }

    // MARK: Transport

    private func transportRead() -> IOResult {
        guard let tls else { return Socket.read(fd, into: loop.readBuffer) }
        return tls.read(into: loop.readBuffer)
    }

    private func transportWrite(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        guard let tls else { return Socket.write(fd, bytes) }
        return tls.write(bytes)
    }

    private func transportShutdownWrite() {
        tls?.shutdown()
        Socket.shutdownWrite(fd)
    }

    /// Plain HTTP reached a TLS port: answer in plaintext, so the client reads why, then close.
    private func refusePlaintext() {
        tls = nil
        fail(status: 400, message: "This port speaks HTTPS (TLS): use https:// or wss://")
    }

    /// Parses buffered input into requests and hands them to the handler, until paused.
    private func processInput() {
        while machine.acceptsRequests, !isBackpressured {
            let event: HTTPParserEvent?
            do {
                event = try parser.next()
            } catch {
                fail(status: error.status, message: error.userMessage)
                break
            }
            guard let event else {
                if !chargeBody(upTo: parser.currentBodyByteCount) { failBodyMemory() }
                break
            }
            switch event {
            case .continueExpected:  // only from parsers that do not report heads
                queueContinue()
            case .head(let head, let bodyLength, let expectsContinue):
                headReceived(head, bodyLength: bodyLength, expectsContinue: expectsContinue)
            case .request(var request):
                if isDroppingBody {
                    isDroppingBody = false  // answered from its head
                    continue
                }
                guard chargeBody(upTo: request.body.count) else {
                    failBodyMemory()
                    break
                }
                request.remoteAddress = remoteAddress
                request.bodyCharge = bodyCharge
                bodyCharge = nil
                let entry = PipelineEntry(keepAlive: request.keepAlive, isHTTP10: request.version == .http10)
                pipeline.append(entry)
                machine.requestParsed(keepAlive: request.keepAlive)
                guard let server else { return }
                server.handler.handle(request, HTTPResponder(connection: self, entry: entry))
            }
        }
        updateInterest()
        updateTimer()
    }

    private func queueContinue() {
        pipeline.append(
            PipelineEntry(state: .interim(HTTPResponseWriter.continueBytes), keepAlive: true, isHTTP10: false))
        markDirty()
    }

    /// The largest body that, when it arrived with its head, is read before the handler sees the request.
    static let bufferedBodyDecidedWhole = 16 * 1024

    /// A head whose body follows: the handler may refuse it now; otherwise its body is charged to the budget
    /// (all of a declared `Content-Length` at once) and, when asked, `100 Continue` is sent.
    private func headReceived(_ head: HTTPRequest, bodyLength: Int?, expectsContinue: Bool) {
        guard let server else { return }
        var head = head
        head.remoteAddress = remoteAddress
        // A small body that has already arrived whole costs nothing more to read: the handler then decides with
        // the whole request, which by `refusalBeforeBody`'s contract gets the same answer, instead of examining the
        // head twice (the head's checks were a tenth of a small REST write's loop time).
        let bodyIsHere =
            !expectsContinue
            && bodyLength.map { $0 <= Self.bufferedBodyDecidedWhole && $0 <= parser.bufferedByteCount } ?? false
        if !bodyIsHere, let refusal = server.handler.refusalBeforeBody(head) {
            refuseBody(refusal, head: head, expectsContinue: expectsContinue)
            return
        }
        guard let charge = server.bodyBudget.reserve(bodyLength ?? 0) else {
            server.bodyMemoryRefusals += 1
            server.logger.warning(
                "http.body_memory",
                [
                    "conn": "\(id)", "peer": remoteAddress, "length": "\(bodyLength ?? 0)",
                    "in_flight": "\(server.bodyBudget.usedBytes)", "total": "\(server.bodyMemoryRefusals)",
                ])
            refuseBody(server.bodyMemoryRefusal, head: head, expectsContinue: expectsContinue)
            return
        }
        bodyCharge = charge
        if expectsContinue { queueContinue() }
    }

    /// Answers a request from its head. Its body is read and dropped so the connection stays usable, unless the
    /// client asked `Expect: 100-continue` (it may never send the body) or the connection ends anyway: then the
    /// connection closes once the answer is written.
    private func refuseBody(_ response: HTTPResponse, head: HTTPRequest, expectsContinue: Bool) {
        parser.discardBody()
        if expectsContinue || !head.keepAlive {
            fail(response)
            return
        }
        isDroppingBody = true
        machine.requestParsed(keepAlive: true)
        pipeline.append(PipelineEntry(state: .response(response), keepAlive: true, isHTTP10: head.version == .http10))
        markDirty()
    }

    /// Grows a chunked body's charge to the `bytes` kept so far; false when the budget cannot cover them.
    private func chargeBody(upTo bytes: Int) -> Bool {
        guard let bodyCharge, bytes > bodyCharge.bytes else { return true }
        return bodyCharge.grow(to: bytes)
    }

    /// A chunked body outgrew the body budget mid-way: 503, and the connection closes after it.
    private func failBodyMemory() {
        guard let server else { return }
        server.bodyMemoryRefusals += 1
        server.logger.warning(
            "http.body_memory",
            [
                "conn": "\(id)", "peer": remoteAddress, "length": "\(parser.currentBodyByteCount)",
                "in_flight": "\(server.bodyBudget.usedBytes)", "total": "\(server.bodyMemoryRefusals)",
            ])
        parser.discardBody()
        bodyCharge = nil
        fail(server.bodyMemoryRefusal)
    }

    private var isBackpressured: Bool {
        pipeline.count >= limits.maxPipelinedRequests || pendingOutputBytes > limits.outputSoftLimitBytes
    }

    /// Queues an error response, stops reading requests, and closes (lingering) after it is written.
    private func fail(status: Int, message: String) {
        fail(.error(status: status, message: message))
    }

    private func fail(_ response: HTTPResponse) {
        pipeline.append(PipelineEntry(state: .response(response), keepAlive: false, isHTTP10: false))
        machine.requestFailed()
        markDirty()
        updateInterest()
        updateTimer()
    }

    // MARK: Called by responders and streams

    func entryCompleted() {
        markDirty()
    }

    func streamStarted() {
        machine.streamStarted()
        markDirty()
        updateInterest()
        updateTimer()
    }

    func upgradeStarted() {
        machine.upgradeStarted()
        markDirty()
        updateInterest()
        updateTimer()
    }

    /// A close frame was queued: close (lingering) once it is written.
    func webSocketClosing() {
        machine.webSocketClosing()
        markDirty()
    }

    /// Lets a WebSocket encode frames straight into the output buffer.
    func appendOutput(_ write: (inout [UInt8]) -> Void) {
        guard !isClosed else { return }
        write(&output)
        markDirty()
    }

    /// Appends bytes that are already encoded (frames shared by a fan-out) to the output buffer.
    func appendOutput(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        output.append(contentsOf: bytes)
        markDirty()
    }

    func markDirty() {
        guard !isClosed, !isDirty else { return }
        server?.markDirty(self)
    }

    // MARK: Output

    /// Moves finished answers into the output buffer (in order) and writes. Called once per loop pass.
    func flush() {
        isDirty = false
        isAnswering = false
        guard !isClosed else { return }
        moveAnswersToOutput()
        writeOutput()
        guard !isClosed else { return }
        if parser.bufferedByteCount > 0 { processInput() }
    }

    private func moveAnswersToOutput() {
        while let entry = pipeline.first {
            switch entry.state {
            case .pending:
                return
            case .interim(let bytes):
                output.append(contentsOf: bytes)
                pipeline.removeFirst()
            case .response(let response):
                pipeline.removeFirst()
                let closing = !entry.keepAlive || (!machine.acceptsRequests && pipeline.isEmpty)
                let persistence: HTTPResponseWriter.Persistence =
                    closing ? .close : (entry.isHTTP10 ? .keepAliveHTTP10 : .keepAlive)
                output.append(contentsOf: HTTPResponseWriter.bytes(for: response, persistence: persistence))
                if closing {
                    machine.lastAnswerQueued()
                    abandonPipeline()
                    return
                }
            case .stream(let stream):
                if !stream.isHeadWritten {
                    output.append(contentsOf: stream.head)
                    stream.isHeadWritten = true
                }
                output.append(contentsOf: stream.takeBuffer())
                if stream.isClosed {
                    pipeline.removeFirst()
                    machine.lastAnswerQueued()
                    abandonPipeline()
                }
                return
            case .upgrade(let upgraded, let responseBytes):
                pipeline.removeFirst()
                output.append(contentsOf: responseBytes)
                upgraded.switched(into: &output)
                abandonPipeline()
                machine.upgradeCompleted()
                webSocket = upgraded
                let early = parser.takeRemainingBytes()
                if !early.isEmpty { upgraded.receive(early) }
                return
            }
        }
        if machine.closesWhenPipelineEmpty { machine.lastAnswerQueued() }
    }

    private func abandonPipeline() {
        for entry in pipeline {
            entry.isAbandoned = true
            if case .stream(let stream) = entry.state { stream.markClosed(notify: true) }
        }
        pipeline.removeAll()
    }

    private func writeOutput() {
        while outputOffset < output.count {
            let result = output.withUnsafeBytes { raw in
                transportWrite(UnsafeRawBufferPointer(rebasing: raw[outputOffset...]))
            }
            switch result {
            case .transferred(let count):
                outputOffset += count
                server?.bytesSent &+= count
                machine.activity(at: loop.clock.nowNanoseconds())
            case .wouldBlock:
                if let tls, !tls.wantsWritable { writeWantsRead = true }
            case .endOfFile, .failed:
                close()
                return
            }
            if result == .wouldBlock { break }
        }
        // Reported before any path below returns (a close or a linger), so the server's sum is never stale.
        let backlog = machine.isSubjectToHardLimit ? streamingBacklog : 0
        server?.backlogChanged(self, to: backlog)
        if outputOffset == output.count {
            // Idle connections keep little memory: only small buffers are kept for reuse.
            output.removeAll(keepingCapacity: output.capacity <= 8 * 1024)
            outputOffset = 0
            switch machine.outputWritten() {
            case .none:
                break
            case .close:
                close()
                return
            case .linger:
                // Stop sending, keep reading (and discarding) until the peer closes or the linger timer fires.
                transportShutdownWrite()
                updateInterest()
                updateTimer()
                return
            }
        } else if outputOffset >= 64 * 1024 && outputOffset * 2 >= output.count {
            output.removeSubrange(0..<outputOffset)
            outputOffset = 0
        }
        if backlog > limits.outputHardLimitBytes {
            if let server {
                server.slowConsumersDisconnected += 1
                server.logger.warning(
                    "conn.output_limit",
                    [
                        "conn": "\(id)", "peer": remoteAddress, "backlog": "\(backlog)",
                        "total": "\(server.slowConsumersDisconnected)",
                    ])
            }
            close()
            return
        }
        updateInterest()
        updateTimer()
    }

    private var streamingBacklog: Int {
        pipeline.reduce(pendingOutputBytes) { total, entry in
            if case .stream(let stream) = entry.state { return total + stream.bufferedBytesInStream }
            return total
        }
    }

    // MARK: Shutdown and close

    /// Graceful server shutdown: finish the answers in flight, end streams, close idle connections.
    func beginShutdown() {
        guard !isClosed else { return }
        machine.shutdownBegan(midRequest: parser.phase != .idle)
        for entry in pipeline {
            if case .stream(let stream) = entry.state { stream.markClosed(notify: true) }
        }
        webSocket?.terminate(code: 1001)  // going away
        markDirty()
        updateInterest()
        updateTimer()
    }

    /// Closes the socket now; unanswered requests are abandoned and open streams notified.
    func close() {
        guard !isClosed else { return }
        machine.closed()
        timer?.cancel()
        timer = nil
        loop.unregister(fd: fd)
        tls?.shutdown()
        tls = nil
        Socket.close(fd)
        let entries = pipeline
        pipeline.removeAll()
        output = []
        outputOffset = 0
        bodyCharge = nil
        parser.discardBody()
        for entry in entries {
            entry.isAbandoned = true
            switch entry.state {
            case .stream(let stream): stream.markClosed(notify: true)
            case .upgrade(let upgraded, _): upgraded.markClosed(notify: false)
            default: break
            }
        }
        webSocket?.markClosed(notify: true)
        server?.connectionClosed(self)
    }

    // MARK: Interest and timers

    private func updateInterest() {
        guard !isClosed else { return }
        let readable = machine.wantsToRead(
            isBackpressured: isBackpressured, isWebSocketOpen: webSocket.map { !$0.isClosed } ?? false,
            isOverSoftLimit: pendingOutputBytes > limits.outputSoftLimitBytes) || writeWantsRead
        let writable = (pendingOutputBytes > 0 && !writeWantsRead) || readWantsWrite
        guard readable != registeredInterest.readable || writable != registeredInterest.writable else { return }
        registeredInterest = (readable, writable)
        loop.setInterest(fd: fd, readable: readable, writable: writable)
    }

    private func updateTimer() {
        let phase: HTTPConnectionStateMachine.ParserPhase =
            switch parser.phase {
            case .idle: .idle
            case .head: .head
            case .body: .body
            }
        let kind = machine.timer(
            isPipelineEmpty: pipeline.isEmpty, hasPendingOutput: pendingOutputBytes > 0, parser: phase)
        guard kind != timerKind else { return }
        timer?.cancel()
        timer = nil
        timerKind = kind
        guard let milliseconds = machine.timeoutMilliseconds(kind, limits: limits) else { return }
        arm(kind, afterMilliseconds: milliseconds)
    }

    private func arm(_ kind: TimerKind, afterMilliseconds milliseconds: Int64) {
        timerKind = kind
        timer = loop.schedule(afterMilliseconds: milliseconds) { [link] in link.target?.timerFired(kind) }
    }

    private func timerFired(_ kind: TimerKind) {
        timer = nil
        timerKind = .none
        switch machine.timerFired(kind, now: loop.clock.nowNanoseconds(), limits: limits) {
        case .none:
            return
        case .close:
            close()
        case .failRequestTimeout:
            fail(status: 408, message: "Request timeout")
        case .rearm(let milliseconds):
            arm(kind, afterMilliseconds: milliseconds)
        case .terminateWebSocket:
            if let webSocket, !webSocket.isClosed {
                webSocket.terminate(code: 1001)  // going away; closes once the close frame is written
                updateTimer()
            } else {
                close()  // even the close frame could not be written
            }
        }
    }
}
