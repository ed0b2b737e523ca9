// HTTPResponder -- the handle a handler answers one request through: a response, or the start of a stream.

/// One request's slot in its connection's response order. Loop-confined.
///
/// Responses leave in request order even when handlers complete out of order (pipelining): an answer is
/// held until every earlier one on the same connection has been written.
public final class HTTPResponder {
    private let link: ConnectionLink
    /// The connection, or nil once it is gone.
    var connection: HTTPConnection? { link.target }
    let entry: PipelineEntry
    public fileprivate(set) var hasAnswered = false

    init(connection: HTTPConnection, entry: PipelineEntry) {
        self.link = connection.link
        self.entry = entry
    }

    deinit {
        // A handler that drops its responder must not wedge the connection's response order.
        if !hasAnswered, let connection, !isClosed {
            entry.state = .response(.error(status: 500, message: "Internal error: request was not answered"))
            connection.entryCompleted()
        }
    }

    /// True once the connection is gone; answers are then dropped.
    public var isClosed: Bool {
        guard let connection else { return true }
        return connection.isClosed || entry.isAbandoned
    }

    /// Sends the response (after all earlier responses on the connection). Call exactly once, on the loop.
    public func respond(_ response: HTTPResponse) {
        precondition(!hasAnswered, "HTTPResponder answered twice")
        hasAnswered = true
        guard let connection, !isClosed else { return }
        connection.loop.assertInLoop()
        entry.state = .response(response)
        connection.entryCompleted()
    }

    /// Starts a close-delimited streaming response (no `Content-Length`, `Connection: close`), as used for
    /// Server-Sent Events. The head is written as soon as earlier responses are out.
    ///
    /// The connection reads no further requests; it closes after ``HTTPStream/close()``.
    /// - Returns: the stream; already closed if the connection is gone.
    public func startStream(status: Int, headers: [(String, String)]) -> HTTPStream {
        precondition(!hasAnswered, "HTTPResponder answered twice")
        hasAnswered = true
        let stream = HTTPStream(
            connection: connection, head: HTTPResponseWriter.streamHead(status: status, headers: headers))
        guard let connection, !isClosed else {
            stream.markClosed(notify: false)
            return stream
        }
        connection.loop.assertInLoop()
        entry.state = .stream(stream)
        connection.streamStarted()
        return stream
    }
}

extension HTTPResponder {
    /// Switches the connection to WebSocket once `responseBytes` (the 101) are written.
    func acceptUpgrade(responseBytes: [UInt8], limits: WebSocketLimits) -> WebSocketConnection? {
        precondition(!hasAnswered, "HTTPResponder answered twice")
        hasAnswered = true
        guard let connection, !isClosed else { return nil }
        connection.loop.assertInLoop()
        let webSocket = WebSocketConnection(connection: connection, limits: limits)
        entry.state = .upgrade(webSocket, responseBytes)
        connection.upgradeStarted()
        return webSocket
    }
}

/// A pipeline slot: what a request has produced so far.
final class PipelineEntry {
    enum State {
        case pending
        case interim([UInt8])
        case response(HTTPResponse)
        case stream(HTTPStream)
        case upgrade(WebSocketConnection, [UInt8])
    }
    var state: State
    let keepAlive: Bool
    let isHTTP10: Bool
    var isAbandoned = false

    init(state: State = .pending, keepAlive: Bool, isHTTP10: Bool) {
        self.state = state
        self.keepAlive = keepAlive
        self.isHTTP10 = isHTTP10
    }
}
