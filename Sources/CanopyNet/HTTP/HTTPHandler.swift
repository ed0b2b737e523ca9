// HTTPHandler -- the single method an application implements to serve requests.

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
}
