// HTTPConnection -- one accepted socket: reads and parses requests, keeps responses in order, batches output.
//
// Life of a connection (all on its loop):
//   open ──request with Connection: close / EOF after requests / shutdown / error──▶ draining
//   draining: no new requests are parsed; once every queued response is written the socket closes
//   (after an error response it first "lingers": shuts down its write side and discards input for a moment,
//   so the client reads the error instead of a TCP reset).
//   A streaming response (SSE) makes the connection draining too; it closes when the stream ends.
//   A WebSocket upgrade also stops HTTP parsing; once the 101 is written, input goes to the WebSocket
//   decoder (with any bytes that arrived behind the upgrade request) and frames share the same output.
// Reading pauses (EPOLLIN interest dropped) while too many requests await answers or unwritten output is
// above the soft limit. Output is appended during the loop pass and written by the server's flush hook;
// EPOLLOUT interest is held only while output remains. One timer at a time guards the connection: idle
// (between requests), head (slowloris), body (no progress) or linger.
import CCanopyLinux
import CanopyCore

#if canImport(Glibc)
    import Glibc
#endif

final class HTTPConnection {
    private enum TimerKind { case none, idle, head, body, linger, webSocketIdle }

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

    private(set) var isClosed = false
    /// No further requests are read; close once the pipeline is empty and output written.
    private var isDraining = false
    private var isStreaming = false
    /// A 101 is queued; HTTP parsing has stopped and input is kept for the WebSocket.
    private var isUpgrading = false
    private var webSocket: WebSocketConnection?
    private var closeAfterWrite = false
    private var lingerOnClose = false
    private var isLingering = false
    private var peerClosed = false
    private var requestCount = 0
    var isDirty = false

    /// The interest last registered with the loop (readable, writable), so unchanged interest costs no lookup.
    private var registeredInterest = (readable: true, writable: false)
    private var timer: TimerHandle?
    private var timerKind = TimerKind.none
    private var lastActivity: UInt64 = 0

    init(id: Int, fd: Int32, remoteAddress: String, loop: EventLoop, server: HTTPServer, limits: HTTPServerLimits) {
        self.id = id
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.loop = loop
        self.server = server
        self.limits = limits
        self.parser = HTTPRequestParser(limits: limits.parserLimits)
    }

    deinit {
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
        lastActivity = monotonicNanoseconds()
        updateTimer()
    }

    var pendingOutputBytes: Int { output.count - outputOffset }

    // MARK: Events

    private func handle(_ events: IOEvents) {
        if events.isWritable { writeOutput() }
        guard !isClosed else { return }
        if events.isReadable {
            readOnce()
        } else if events.isHangup {
            close()
        }
    }

    private func readOnce() {
        let result = Socket.read(fd, into: loop.readBuffer)
        switch result {
        case .transferred(let count):
            lastActivity = monotonicNanoseconds()
            let bytes = UnsafeRawBufferPointer(rebasing: loop.readBuffer[0..<count])
            // Lingering or streaming: input is only read to notice the peer closing.
            if isLingering || isStreaming { return }
            if let webSocket {
                webSocket.receive(bytes)
                updateInterest()
                return
            }
            if isUpgrading {
                parser.append(bytes)
                return
            }
            guard !isDraining else { return }
            parser.append(bytes)
            processInput()
        case .wouldBlock:
            return
        case .endOfFile:
            if isLingering || isStreaming || webSocket != nil || pipeline.isEmpty || peerClosed {
                close()
            } else {
                // Half-close after sending requests (`nc -N`, `curl` with `--no-keepalive`): answer, then close.
                peerClosed = true
                isDraining = true
                updateInterest()
                updateTimer()
            }
        case .failed:
            close()
        }
    }

    /// Parses buffered input into requests and hands them to the handler, until paused.
    private func processInput() {
        while !isClosed, !isDraining, !isStreaming, !isBackpressured {
            let event: HTTPParserEvent?
            do {
                event = try parser.next()
            } catch {
                fail(status: error.status, message: error.userMessage)
                break
            }
            guard let event else { break }
            switch event {
            case .continueExpected:
                pipeline.append(
                    PipelineEntry(state: .interim(HTTPResponseWriter.continueBytes), keepAlive: true, isHTTP10: false))
                markDirty()
            case .request(var request):
                request.remoteAddress = remoteAddress
                requestCount += 1
                let entry = PipelineEntry(keepAlive: request.keepAlive, isHTTP10: request.version == .http10)
                pipeline.append(entry)
                if !request.keepAlive { isDraining = true }
                guard let server else { return }
                server.handler.handle(request, HTTPResponder(connection: self, entry: entry))
            }
        }
        updateInterest()
        updateTimer()
    }

    private var isBackpressured: Bool {
        pipeline.count >= limits.maxPipelinedRequests || pendingOutputBytes > limits.outputSoftLimitBytes
    }

    /// Queues an error response, stops reading requests, and closes (lingering) after it is written.
    private func fail(status: Int, message: String) {
        pipeline.append(
            PipelineEntry(state: .response(.error(status: status, message: message)), keepAlive: false, isHTTP10: false)
        )
        isDraining = true
        lingerOnClose = true
        markDirty()
        updateInterest()
        updateTimer()
    }

    // MARK: Called by responders and streams

    func entryCompleted() {
        markDirty()
    }

    func streamStarted() {
        isStreaming = true
        isDraining = true
        markDirty()
        updateInterest()
        updateTimer()
    }

    func upgradeStarted() {
        isUpgrading = true
        isDraining = true
        markDirty()
        updateInterest()
        updateTimer()
    }

    /// A close frame was queued: close (lingering) once it is written.
    func webSocketClosing() {
        closeAfterWrite = true
        lingerOnClose = true
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
                let closing = !entry.keepAlive || (isDraining && pipeline.isEmpty)
                let persistence: HTTPResponseWriter.Persistence =
                    closing ? .close : (entry.isHTTP10 ? .keepAliveHTTP10 : .keepAlive)
                output.append(contentsOf: HTTPResponseWriter.bytes(for: response, persistence: persistence))
                if closing {
                    closeAfterWrite = true
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
                    closeAfterWrite = true
                    abandonPipeline()
                }
                return
            case .upgrade(let upgraded, let responseBytes):
                pipeline.removeFirst()
                output.append(contentsOf: responseBytes)
                upgraded.switched(into: &output)
                abandonPipeline()
                isUpgrading = false
                webSocket = upgraded
                let early = parser.takeRemainingBytes()
                if !early.isEmpty { upgraded.receive(early) }
                return
            }
        }
        if isDraining && webSocket == nil { closeAfterWrite = true }
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
                Socket.write(fd, UnsafeRawBufferPointer(rebasing: raw[outputOffset...]))
            }
            switch result {
            case .transferred(let count):
                outputOffset += count
                lastActivity = monotonicNanoseconds()
            case .wouldBlock:
                break
            case .endOfFile, .failed:
                close()
                return
            }
            if result == .wouldBlock { break }
        }
        if outputOffset == output.count {
            // Idle connections keep little memory: only small buffers are kept for reuse.
            output.removeAll(keepingCapacity: output.capacity <= 8 * 1024)
            outputOffset = 0
            if closeAfterWrite {
                finishClosing()
                return
            }
        } else if outputOffset >= 64 * 1024 && outputOffset * 2 >= output.count {
            output.removeSubrange(0..<outputOffset)
            outputOffset = 0
        }
        if (isStreaming || webSocket != nil) && streamingBacklog > limits.outputHardLimitBytes {
            if let server {
                server.slowConsumersDisconnected += 1
                server.logger.warning(
                    "conn.output_limit",
                    [
                        "conn": "\(id)", "peer": remoteAddress, "backlog": "\(streamingBacklog)",
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

    private func finishClosing() {
        guard lingerOnClose, !peerClosed else {
            close()
            return
        }
        // Stop sending, keep reading (and discarding) until the peer closes or the linger timer fires.
        isLingering = true
        Socket.shutdownWrite(fd)
        updateInterest()
        updateTimer()
    }

    // MARK: Shutdown and close

    /// Graceful server shutdown: finish the answers in flight, end streams, close idle connections.
    func beginShutdown() {
        guard !isClosed else { return }
        isDraining = true
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
        isClosed = true
        timer?.cancel()
        timer = nil
        loop.unregister(fd: fd)
        Socket.close(fd)
        let entries = pipeline
        pipeline.removeAll()
        output = []
        outputOffset = 0
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
        let isWebSocketOpen = webSocket.map { !$0.isClosed } ?? false
        let readable =
            isLingering || isStreaming
            || (isWebSocketOpen && pendingOutputBytes <= limits.outputSoftLimitBytes)
            || (!isDraining && !isBackpressured)
        let writable = pendingOutputBytes > 0
        guard readable != registeredInterest.readable || writable != registeredInterest.writable else { return }
        registeredInterest = (readable, writable)
        loop.setInterest(fd: fd, readable: readable, writable: writable)
    }

    private func desiredTimer() -> TimerKind {
        if isClosed { return .none }
        if isLingering { return .linger }
        if webSocket != nil { return .webSocketIdle }
        if isStreaming || !pipeline.isEmpty { return .none }
        if pendingOutputBytes > 0 { return .idle }
        switch parser.phase {
        case .idle: return .idle
        case .head: return .head
        case .body: return .body
        }
    }

    private func updateTimer() {
        let kind = desiredTimer()
        guard kind != timerKind else { return }
        timer?.cancel()
        timer = nil
        timerKind = kind
        let milliseconds: Int64
        switch kind {
        case .none: return
        case .idle:
            milliseconds = requestCount == 0 ? min(limits.headerTimeoutMs, limits.idleTimeoutMs) : limits.idleTimeoutMs
        case .head: milliseconds = limits.headerTimeoutMs
        case .body: milliseconds = limits.bodyTimeoutMs
        case .linger: milliseconds = limits.lingerTimeoutMs
        case .webSocketIdle: milliseconds = limits.idleTimeoutMs
        }
        timer = loop.schedule(afterMilliseconds: milliseconds) { [weak self] in self?.timerFired(kind) }
    }

    private func timerFired(_ kind: TimerKind) {
        timer = nil
        timerKind = .none
        guard !isClosed else { return }
        switch kind {
        case .none:
            return
        case .idle, .linger:
            close()
        case .head:
            fail(status: 408, message: "Request timeout")
        case .body:
            if !rescheduleIfActive(kind, timeoutMs: limits.bodyTimeoutMs) {
                fail(status: 408, message: "Request timeout")
            }
        case .webSocketIdle:
            guard !rescheduleIfActive(kind, timeoutMs: limits.idleTimeoutMs) else { return }
            if let webSocket, !webSocket.isClosed {
                webSocket.terminate(code: 1001)  // going away; closes once the close frame is written
                updateTimer()
            } else {
                close()  // even the close frame could not be written
            }
        }
    }

    /// Inactivity timers are not reset on every read; when one fires early relative to the last
    /// activity it is re-armed for the remainder.
    /// - Returns: true if re-armed, false if the connection really was inactive for `timeoutMs`.
    private func rescheduleIfActive(_ kind: TimerKind, timeoutMs: Int64) -> Bool {
        let idleFor = Int64((monotonicNanoseconds() - lastActivity) / 1_000_000)
        guard idleFor < timeoutMs else { return false }
        timerKind = kind
        timer = loop.schedule(afterMilliseconds: timeoutMs - idleFor) { [weak self] in self?.timerFired(kind) }
        return true
    }
}
