// WebSocketConnection -- an upgraded connection: delivers text messages, sends frames, runs the close handshake.

/// Settings for upgraded connections.
public struct WebSocketLimits: Sendable, Equatable {
    /// Largest incoming message, all fragments together (1009 beyond). Default 17 MiB: the Firebase SDKs'
    /// 16 MB write limit plus envelope.
    public var maxMessageBytes = 17 * 1024 * 1024

    /// Creates the default limits.
    public init() {}
}

/// One WebSocket peer, server side. Loop-confined.
///
/// Messages sent in one loop pass leave in one write. Pings are answered automatically. ``onClose`` fires
/// once when the connection ends for any reason other than the owner's own ``close(code:reason:)``: the peer sent
/// a close frame or disconnected, a protocol error (answered with 1002, 1007 or 1009), the output hard limit,
/// the idle timeout, or server shutdown (1001).
public final class WebSocketConnection {
    /// Held without reference counting: every fan-out event passes through here, and a weak reference costs a
    /// side-table lookup and atomic operations each time. Touched only while `isClosed` is false, which holds
    /// only while the connection is alive: its `close()` and its `deinit` both mark this WebSocket closed.
    private unowned(unsafe) let connection: HTTPConnection
    private var decoder: WebSocketDecoder

    /// Called for each complete text message.
    public var onText: ((String) -> Void)?
    /// Called for each complete binary message.
    public var onBinary: (([UInt8]) -> Void)?
    /// Called once when the peer or the server ends the connection (not after ``close(code:reason:)``).
    public var onClose: (() -> Void)?
    /// True once a close frame was sent or received, or the socket is gone.
    public private(set) var isClosed = false
    /// Whether the 101 response has gone into the connection's output (see `switched(into:)`).
    private var isSwitched = false
    private var framesBeforeSwitch: [UInt8] = []
    /// The status code in the peer's close frame, if it sent one.
    public private(set) var peerCloseCode: UInt16?
    /// The peer as `address:port`.
    public let remoteAddress: String
    /// The share of the server's body budget held by messages being received: what the decoder holds, plus what
    /// the owner holds of a message it reassembles from several (`holdInbound(_:)`).
    private var inboundCharge: BodyCharge?
    private var ownerHeldBytes = 0

    init(connection: HTTPConnection, limits: WebSocketLimits) {
        self.connection = connection
        self.remoteAddress = connection.remoteAddress
        self.decoder = WebSocketDecoder(maxMessageBytes: limits.maxMessageBytes)
    }

    /// Bytes queued but not yet written to the socket (compare with the server's limits to shed load).
    public var bufferedBytes: Int { isClosed ? 0 : connection.pendingOutputBytes }

    /// Sends one text message as a single frame.
    public func send(text: String) {
        sendFrame(.text, payload: text.utf8)
    }

    /// Sends one binary message as a single frame.
    public func send(binary: [UInt8]) {
        sendFrame(.binary, payload: binary)
    }

    /// Sends frames encoded once for many connections (see ``WebSocketFrames``); they leave in this loop pass's
    /// batched write, after everything sent earlier.
    public func send(_ frames: WebSocketFrames) {
        guard !frames.isEmpty, !isClosed else { return }
        guard isSwitched else {
            framesBeforeSwitch.append(contentsOf: frames.bytes)
            return
        }
        // Borrowed without a retain (see `connection`); once per delivered event.
        Unmanaged.passUnretained(connection)._withUnsafeGuaranteedRef { connection in
            guard !connection.isClosed else { return }
            connection.loop.assertInLoop()
            connection.appendOutput(frames.bytes)
        }
    }

    /// Sends frames that answer a request (a write's acknowledgement). When they are the connection's first output
    /// of this loop pass, the connection is written with the pass's answers, before the WebSockets that carry only
    /// events (`FlushOrder`): a writer waiting for its acknowledgements is not kept behind a fan-out to others.
    public func sendAnswer(_ frames: WebSocketFrames) {
        guard !frames.isEmpty, !isClosed, isSwitched else { return send(frames) }
        if !connection.isClosed && !connection.isDirty { connection.isAnswering = true }
        send(frames)
    }

    /// Sends a close frame with `code` (and a short `reason`, cut to fit) and closes the connection once it
    /// is written. ``onClose`` does not fire.
    public func close(code: UInt16 = 1000, reason: String = "") {
        guard !isClosed else { return }
        sendFrame(.close, payload: WebSocketFrameEncoder.closePayload(code: code, reason: reason))
        finish(notify: false)
    }

    // MARK: Called by the connection

    /// Decodes received bytes and dispatches the events.
    func receive(_ bytes: some Collection<UInt8>) {
        guard !isClosed else { return }  // closing: input is only drained until the socket closes
        decoder.append(bytes)
        defer { if !isClosed { _ = chargeInbound() } }  // what is still held once the complete messages are out
        guard chargeInbound() else { return }
        while !isClosed {
            let event: WebSocketEvent?
            do {
                event = try decoder.next()
            } catch {
                sendFrame(.close, payload: WebSocketFrameEncoder.closePayload(code: error.closeCode))
                finish(notify: true)
                return
            }
            guard let event else { return }
            switch event {
            case .text(let text): onText?(text)
            case .binary(let bytes): onBinary?(bytes)
            case .ping(let payload): sendFrame(.pong, payload: payload)
            case .pong: break
            case .close(let code, _):
                peerCloseCode = code
                // Echo the peer's code (§5.5.1); an empty close is answered with an empty close.
                sendFrame(.close, payload: code.map { WebSocketFrameEncoder.closePayload(code: $0) } ?? [])
                finish(notify: true)
            }
        }
    }

    /// Declares that the owner holds `bytes` of a message it is reassembling from several (the wire protocol's
    /// counted pieces); they share the server's body budget with request bodies. Past it the connection is closed
    /// with 1013 (try again later).
    /// - Returns: false when the connection was closed for it.
    public func holdInbound(_ bytes: Int) -> Bool {
        guard !isClosed else { return false }
        ownerHeldBytes = max(bytes, 0)
        return chargeInbound()
    }

    /// Brings the inbound charge to what is held now; closes with 1013 when the budget cannot cover it.
    private func chargeInbound() -> Bool {
        let held = decoder.heldByteCount + ownerHeldBytes
        if let inboundCharge {
            guard held > inboundCharge.bytes else {
                inboundCharge.shrink(to: held)
                return true
            }
            if inboundCharge.grow(to: held) { return true }
        } else {
            guard held > 0, let budget = connection.bodyBudget else { return true }
            inboundCharge = budget.reserve(held)
            if inboundCharge != nil { return true }
        }
        inboundCharge = nil
        sendFrame(.close, payload: WebSocketFrameEncoder.closePayload(code: 1013))  // try again later
        finish(notify: true)
        return false
    }

    /// The server ends the connection (shutdown: 1001 going away; idle timeout).
    func terminate(code: UInt16) {
        guard !isClosed else { return }
        sendFrame(.close, payload: WebSocketFrameEncoder.closePayload(code: code))
        finish(notify: true)
    }

    /// The socket is gone.
    func markClosed(notify: Bool) {
        guard !isClosed else { return }
        isClosed = true
        inboundCharge = nil
        let callback = onClose
        onClose = nil
        onText = nil
        onBinary = nil
        if notify { callback?() }
    }

    private func sendFrame(_ opcode: WebSocketOpcode, payload: some Collection<UInt8>) {
        guard !isClosed, !connection.isClosed else { return }
        connection.loop.assertInLoop()
        guard isSwitched else {
            // The 101 response is still queued behind earlier responses: frames must not overtake it.
            WebSocketFrameEncoder.encode(opcode, payload: payload, into: &framesBeforeSwitch)
            return
        }
        connection.appendOutput { out in WebSocketFrameEncoder.encode(opcode, payload: payload, into: &out) }
    }

    /// Called once the `101 Switching Protocols` response was written: frames sent earlier follow it now.
    func switched(into output: inout [UInt8]) {
        isSwitched = true
        output.append(contentsOf: framesBeforeSwitch)
        framesBeforeSwitch = []
    }

    private func finish(notify: Bool) {
        guard !isClosed else { return }
        connection.webSocketClosing()
        markClosed(notify: notify)
    }
}

extension HTTPResponder {
    /// Accepts the request as a WebSocket opening handshake and switches the connection to WebSocket.
    ///
    /// The `101 Switching Protocols` response goes out after earlier responses on the connection; no
    /// extension (permessage-deflate) or subprotocol is negotiated. If the handshake is invalid this
    /// responder answers with 400 (426 for a wrong `Sec-WebSocket-Version`) and returns nil.
    /// - Parameters:
    ///   - request: the request this responder belongs to.
    ///   - limits: message size limit for the connection.
    /// - Returns: the connection (set its callbacks right away), or nil after an error response.
    public func upgradeToWebSocket(_ request: HTTPRequest, limits: WebSocketLimits = WebSocketLimits())
        -> WebSocketConnection?
    {
        let accept: String
        do {
            accept = try WebSocketHandshake.validate(request)
        } catch {
            var response = HTTPResponse.error(status: error.status, message: error.userMessage)
            if error == .unsupportedVersion { response.headers.append(("Sec-WebSocket-Version", "13")) }
            respond(response)
            return nil
        }
        return acceptUpgrade(responseBytes: WebSocketHandshake.response(accept: accept), limits: limits)
    }
}
