// HTTPHandler -- the single method an application implements to serve requests, and its optional head check.

/// Serves requests. Called on the server's event loop for each complete request, in arrival order.
///
/// The handler must eventually call exactly one of ``HTTPResponder/respond(_:)`` or
/// ``HTTPResponder/startStream(status:headers:)``, now or later (for example after a database commit,
/// hopping back with ``EventLoop/execute(_:)``). A responder dropped without an answer sends 500.
public protocol HTTPHandler: AnyObject {
    /// Handles one request.
    /// - Parameters:
    ///   - request: the complete request, body included.
    ///   - responder: where the answer goes; loop-confined.
    func handle(_ request: HTTPRequest, _ responder: HTTPResponder)

    /// Decides a request from its head alone, before any of its body is read (nor `100 Continue` sent).
    ///
    /// Return a response only when the request would certainly be refused whatever its body holds: it is sent
    /// at once, the body is then read and dropped (or, after `Expect: 100-continue`, the connection closes
    /// after the answer), and ``handle(_:_:)`` is not called for it. The default reads every body.
    /// - Parameter head: the request with an empty `body`; a body follows.
    /// - Returns: the refusal, or nil to read the body and handle the request as usual.
    func refusalBeforeBody(_ head: HTTPRequest) -> HTTPResponse?
}

extension HTTPHandler {
    public func refusalBeforeBody(_ head: HTTPRequest) -> HTTPResponse? { nil }
}
