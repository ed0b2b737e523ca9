// WebSocketClient -- the client side of RFC 6455 on an EventLoop: connect, handshake, masked frames.
//
// Life: connecting (non-blocking connect, then writable) → securing (`wss`: the TLS handshake, the server's
// certificate verified against the client context's CAs and the host name) → handshaking (request sent; the response head is
// read, up to 16 KiB, and must be `101` with `Upgrade: websocket` and the expected Sec-WebSocket-Accept) →
// open (frames; every frame we send is masked with a fresh key, every frame we receive must be unmasked)
// → closed. Output is batched and written once per loop pass. The client keeps itself alive (through its
// registration) until it is closed, so callers may hold it weakly.
import CCanopyLinux
import CanopyCore

/// Why a WebSocket client could not open.
public enum WebSocketClientError: CanopyError, Equatable {
    /// The TCP connection failed.
    case connectFailed(errno: Int32)
    /// The server answered the handshake with a status other than 101.
    case rejected(status: Int)
    /// The handshake response is malformed or its accept value is wrong.
    case invalidHandshake(reason: String)
    /// The connection closed or timed out before the handshake completed.
    case closedDuringHandshake
    /// The TLS handshake failed: the server's certificate was refused (expired, unknown CA, wrong name) or the
    /// server does not speak TLS.
    case tlsFailed(reason: String)

    public var code: String { "websocket_client_failed" }

    public var userMessage: String {
        switch self {
        case .connectFailed(let errno): "WebSocket connect failed (errno \(errno))."
        case .rejected(let status): "WebSocket handshake rejected with HTTP \(status)."
        case .invalidHandshake(let reason): "Invalid WebSocket handshake response: \(reason)."
        case .closedDuringHandshake: "The connection closed before the WebSocket handshake completed."
        case .tlsFailed(let reason): "TLS handshake failed: \(reason)."
        }
    }
}

/// A WebSocket connection to a server. Loop-confined.
///
/// ```swift
/// let client = try WebSocketClient(loop: loop, host: "127.0.0.1", port: port, target: "/.ws?v=5&ns=demo") { result in
///     if case .failure(let error) = result { print(error.userMessage) }
/// }
/// client.onText = { text in print(text) }
/// client.send(text: "{\"t\":\"c\",\"d\":{\"t\":\"p\",\"d\":{}}}")   // queued until the handshake completes
/// ```
public final class WebSocketClient {
    private enum State { case connecting, securing, handshaking, open, closed }
    private static let maxResponseHeadBytes = 16 * 1024
    private static let handshakeTimeoutMs: Int64 = 10_000

    private let loop: EventLoop
    private let fd: Int32
    private var state = State.connecting
    private var onOpen: ((Result<Void, WebSocketClientError>) -> Void)?
    private let expectedAccept: String
    private var handshakeRequest: [UInt8]
    private var responseHead: [UInt8] = []
    private var decoder: WebSocketDecoder
    /// Frames queued before the handshake completed.
    private var pendingFrames: [UInt8] = []
    private var output: [UInt8] = []
    private var outputOffset = 0
    private var isFlushQueued = false
    private var closeAfterWrite = false
    private var isClosing = false
    private var handshakeTimer: TimerHandle?
    private var random: UInt64
    private let host: String
    private let tlsContext: TLSClientContext?
    private var tls: TLSSession?
    /// TLS must write before a read can go on (or read before a write can): the readiness to wait for instead.
    private var readWantsWrite = false
    private var writeWantsRead = false

    /// Called for each complete text message.
    public var onText: ((String) -> Void)?
    /// Called for each complete binary message.
    public var onBinary: (([UInt8]) -> Void)?
    /// Called after the messages of one read from the socket were handed to `onText`/`onBinary`: the frames the
    /// server wrote together (one commit's events) end here together, so a consumer can hand them on as a batch.
    public var onReadEnd: (() -> Void)?
    /// Called once when the server or the network ends an open connection (not after ``close(code:reason:)``).
    public var onClose: (() -> Void)?
    /// The status code in the server's close frame, if it sent one.
    public private(set) var peerCloseCode: UInt16?

    /// Starts connecting. Call on the loop.
    /// - Parameters:
    ///   - host: an IPv4/IPv6 literal or `localhost`.
    ///   - port: the server port.
    ///   - target: the request target, such as `/.ws?v=5&ns=demo`.
    ///   - headers: extra request headers (`Authorization`, `User-Agent`, ...).
    ///   - limits: the incoming message size limit.
    ///   - tls: speak `wss`: TLS verified against this context's CAs and `host`; nil for plain `ws`.
    ///   - onOpen: called once on the loop: success when the handshake completes, or why it failed.
    /// - Throws: ``NetError`` when the address is invalid or the socket cannot be created.
    public init(
        loop: EventLoop, host: String, port: Int, target: String, headers: [(String, String)] = [],
        limits: WebSocketLimits = WebSocketLimits(), tls: TLSClientContext? = nil,
        onOpen: @escaping (Result<Void, WebSocketClientError>) -> Void
    ) throws(NetError) {
        loop.assertInLoop()
        var generator = SystemRandomNumberGenerator()
        random = generator.next() | 1
        let key = WebSocketHandshake.makeKey(using: &generator)
        expectedAccept = WebSocketHandshake.acceptValue(forKey: key)
        let hostField = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var request =
            "GET \(target) HTTP/1.1\r\nHost: \(hostField)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers {
            request += "\(name.filter { $0 != "\r" && $0 != "\n" }): \(value.filter { $0 != "\r" && $0 != "\n" })\r\n"
        }
        handshakeRequest = Array((request + "\r\n").utf8)
        decoder = WebSocketDecoder(maxMessageBytes: limits.maxMessageBytes, expectsMaskedFrames: false)
        self.loop = loop
        self.onOpen = onOpen
        self.host = host
        self.tlsContext = tls
        fd = try Socket.connect(host: host, port: port)
        do {
            // The registration holds the client strongly until close().
            try loop.register(fd: fd, readable: false, writable: true) { events in self.handle(events) }
        } catch {
            Socket.close(fd)
            throw error
        }
        handshakeTimer = loop.schedule(afterMilliseconds: Self.handshakeTimeoutMs) { [weak self] in
            self?.fail(.closedDuringHandshake)
        }
    }

    /// True once the handshake has completed and until the connection ends.
    public var isOpen: Bool { state == .open && !isClosing }
    /// True once the connection has ended or a close was sent.
    public var isClosed: Bool { state == .closed || isClosing }
    /// Bytes queued but not yet written.
    public var bufferedBytes: Int { output.count - outputOffset + pendingFrames.count }

    /// Sends one text message (queued until the handshake completes).
    public func send(text: String) {
        sendFrame(.text, payload: text.utf8)
    }

    /// Sends one binary message (queued until the handshake completes).
    public func send(binary: [UInt8]) {
        sendFrame(.binary, payload: binary)
    }

    /// Sends a close frame and closes the socket once the server answers (or shortly after). No ``onClose``.
    public func close(code: UInt16 = 1000, reason: String = "") {
        guard !isClosed else { return }
        guard state == .open else {
            onOpen = nil
            shutdown(notify: false)
            return
        }
        sendFrame(.close, payload: WebSocketFrameEncoder.closePayload(code: code, reason: reason))
        isClosing = true
        onClose = nil
        // The server echoes the close and closes TCP; don't wait for a server that never does.
        loop.schedule(afterMilliseconds: 2_000) { [weak self] in self?.shutdown(notify: false) }
    }

    // MARK: Events

    private func handle(_ events: IOEvents) {
        switch state {
        case .connecting:
            guard events.isWritable || events.isHangup else { return }
            let error = Socket.pendingError(fd)
            guard error == 0 else {
                fail(.connectFailed(errno: error))
                return
            }
            if let tlsContext {
                do {
                    tls = try TLSSession(client: tlsContext, fd: fd, host: host)
                } catch {
                    fail(.tlsFailed(reason: error.userMessage))
                    return
                }
                state = .securing
                continueTLSHandshake()
            } else {
                sendHandshakeRequest()
            }
        case .securing:
            continueTLSHandshake()
        case .handshaking, .open:
            if events.isWritable || (events.isReadable && writeWantsRead) {
                writeWantsRead = false
                writeOutput()
            }
            if events.isReadable || events.isHangup || (events.isWritable && readWantsWrite) {
                readWantsWrite = false
                readOnce()
                onReadEnd?()
            }
        case .closed:
            return
        }
    }

    private func sendHandshakeRequest() {
        state = .handshaking
        output.append(contentsOf: handshakeRequest)
        handshakeRequest = []
        writeOutput()
    }

    private func continueTLSHandshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case .transferred:
            sendHandshakeRequest()
        case .wouldBlock:
            loop.setInterest(fd: fd, readable: !tls.wantsWritable, writable: tls.wantsWritable)
        case .endOfFile:
            fail(.tlsFailed(reason: "the server closed the connection (does it speak TLS?)"))
        case .failed:
            fail(.tlsFailed(reason: tls.failureReason))
        }
    }

    private func transportRead() -> IOResult {
        guard let tls else { return Socket.read(fd, into: loop.readBuffer) }
        return tls.read(into: loop.readBuffer)
    }

    private func readOnce() {
        guard state != .closed else { return }
        switch transportRead() {
        case .transferred(let count):
            let bytes = UnsafeRawBufferPointer(rebasing: loop.readBuffer[0..<count])
            if state == .handshaking {
                readHandshake(bytes)
            } else {
                receive(bytes)
            }
        case .wouldBlock:
            if tls?.wantsWritable == true {
                readWantsWrite = true
                loop.setInterest(fd: fd, readable: false, writable: true)
            }
            return
        case .endOfFile, .failed:
            if state == .handshaking {
                fail(.closedDuringHandshake)
            } else {
                shutdown(notify: !isClosing)
            }
        }
    }

    private func readHandshake(_ bytes: UnsafeRawBufferPointer) {
        responseHead.append(contentsOf: bytes)
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard let end = firstIndex(of: terminator, in: responseHead) else {
            if responseHead.count > Self.maxResponseHeadBytes {
                fail(.invalidHandshake(reason: "response head too large"))
            }
            return
        }
        let head = String(decoding: responseHead[0..<end], as: UTF8.self)
        let rest = Array(responseHead[(end + 4)...])
        responseHead = []
        var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            fail(.invalidHandshake(reason: "bad status line"))
            return
        }
        guard status == 101 else {
            fail(.rejected(status: status))
            return
        }
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(
                name: String(line[..<colon]), value: String(line[line.index(after: colon)...].trimmingSpacesAndTabs()))
        }
        guard headers.containsToken("websocket", in: "Upgrade"), headers.containsToken("upgrade", in: "Connection")
        else {
            fail(.invalidHandshake(reason: "missing Upgrade or Connection"))
            return
        }
        guard headers.first("Sec-WebSocket-Accept") == expectedAccept else {
            fail(.invalidHandshake(reason: "wrong Sec-WebSocket-Accept"))
            return
        }
        guard headers.first("Sec-WebSocket-Extensions") == nil else {
            fail(.invalidHandshake(reason: "unrequested extension"))
            return
        }
        state = .open
        handshakeTimer?.cancel()
        handshakeTimer = nil
        output.append(contentsOf: pendingFrames)
        pendingFrames = []
        queueFlush()
        loop.setInterest(fd: fd, readable: true, writable: output.count > outputOffset)
        let callback = onOpen
        onOpen = nil
        callback?(.success(()))
        if !rest.isEmpty { receive(rest) }
    }

    private func receive(_ bytes: some Collection<UInt8>) {
        decoder.append(bytes)
        while state == .open {
            let event: WebSocketEvent?
            do {
                event = try decoder.next()
            } catch {
                if !isClosing {
                    sendFrame(.close, payload: WebSocketFrameEncoder.closePayload(code: error.closeCode))
                    isClosing = true
                    closeAfterWrite = true
                    notifyClosed()
                }
                return
            }
            guard let event else { return }
            switch event {
            case .text(let text): if !isClosing { onText?(text) }
            case .binary(let bytes): if !isClosing { onBinary?(bytes) }
            case .ping(let payload): sendFrame(.pong, payload: payload)
            case .pong: break
            case .close(let code, _):
                peerCloseCode = code
                if isClosing {
                    shutdown(notify: false)  // the server answered our close
                } else {
                    sendFrame(.close, payload: code.map { WebSocketFrameEncoder.closePayload(code: $0) } ?? [])
                    isClosing = true
                    closeAfterWrite = true
                    notifyClosed()
                }
                return
            }
        }
    }

    // MARK: Output

    private func sendFrame(_ opcode: WebSocketOpcode, payload: some Collection<UInt8>) {
        guard state != .closed, !isClosing else { return }
        random ^= random << 13
        random ^= random >> 7
        random ^= random << 17
        let key = withUnsafeBytes(of: random) { Array($0.prefix(4)) }
        if state == .open {
            WebSocketFrameEncoder.encode(opcode, payload: payload, maskingKey: key, into: &output)
            queueFlush()
        } else {
            WebSocketFrameEncoder.encode(opcode, payload: payload, maskingKey: key, into: &pendingFrames)
        }
    }

    private func queueFlush() {
        guard !isFlushQueued else { return }
        isFlushQueued = true
        loop.enqueueFlush { [weak self] in
            guard let self else { return }
            self.isFlushQueued = false
            self.writeOutput()
        }
    }

    private func writeOutput() {
        guard state != .closed else { return }
        while outputOffset < output.count {
            let result = output.withUnsafeBytes { raw in
                let bytes = UnsafeRawBufferPointer(rebasing: raw[outputOffset...])
                return tls.map { $0.write(bytes) } ?? Socket.write(fd, bytes)
            }
            guard case .transferred(let count) = result else {
                if result != .wouldBlock { shutdown(notify: !isClosing) }
                if let tls, result == .wouldBlock, !tls.wantsWritable { writeWantsRead = true }
                break
            }
            outputOffset += count
        }
        guard state != .closed else { return }
        let drained = outputOffset == output.count
        if drained {
            output.removeAll(keepingCapacity: output.capacity <= 8 * 1024)
            outputOffset = 0
            if closeAfterWrite {
                shutdown(notify: false)
                return
            }
        }
        loop.setInterest(
            fd: fd, readable: state == .open || state == .handshaking,
            writable: (!drained && !writeWantsRead) || readWantsWrite)
    }

    // MARK: Ending

    private func fail(_ error: WebSocketClientError) {
        guard state != .closed, let callback = onOpen else { return }
        onOpen = nil
        shutdown(notify: false)
        callback(.failure(error))
    }

    private func notifyClosed() {
        let callback = onClose
        onClose = nil
        callback?()
    }

    private func shutdown(notify: Bool) {
        guard state != .closed else { return }
        state = .closed
        handshakeTimer?.cancel()
        handshakeTimer = nil
        loop.unregister(fd: fd)
        tls?.shutdown()
        tls = nil
        Socket.close(fd)
        output = []
        pendingFrames = []
        if notify { notifyClosed() }
        onText = nil
        onBinary = nil
        onReadEnd = nil
        onClose = nil
    }

    private func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
