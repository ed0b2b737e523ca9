// TestServer -- runs an HTTPServer on its own loop thread for live tests, with a closure handler.
import CanopyNet
import Foundation
import Synchronization

/// A handler made from a closure; runs on the loop.
final class ClosureHandler: HTTPHandler {
    let body: (HTTPRequest, HTTPResponder) -> Void
    let refusal: (HTTPRequest) -> HTTPResponse?
    init(
        refusal: @escaping (HTTPRequest) -> HTTPResponse? = { _ in nil },
        _ body: @escaping (HTTPRequest, HTTPResponder) -> Void
    ) {
        self.refusal = refusal
        self.body = body
    }
    func handle(_ request: HTTPRequest, _ responder: HTTPResponder) { body(request, responder) }
    func refusalBeforeBody(_ head: HTTPRequest) -> HTTPResponse? { refusal(head) }
}

/// An event loop on a dedicated thread serving one HTTPServer on 127.0.0.1:0.
// @unchecked Sendable is safe: after init, `server` is touched only on the loop thread (through execute).
final class TestServer: @unchecked Sendable {
    let loop: EventLoop
    let server: HTTPServer
    let port: Int
    private let finished = DispatchSemaphore(value: 0)

    init(limits: HTTPServerLimits = HTTPServerLimits(), handler: @escaping (HTTPRequest, HTTPResponder) -> Void) throws
    {
        loop = try EventLoop()
        server = try HTTPServer(
            loop: loop, host: "127.0.0.1", port: 0, limits: limits, handler: ClosureHandler(handler))
        try server.start()
        port = server.port
        let thread = Thread { [loop, finished] in
            loop.run()
            finished.signal()
        }
        thread.start()
    }

    /// Runs `work` on the loop and waits for it.
    func onLoop<T: Sendable>(_ work: @escaping @Sendable () -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            result.withLock { $0 = work() }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    /// Shuts the server down (gracefully or not), stops the loop and waits for its thread.
    func stop(graceful: Bool = false) {
        loop.execute { [self] in
            server.shutdown(graceful: graceful) { [loop] in loop.stop() }
        }
        finished.wait()
    }
}

/// Polls `condition` for up to five seconds (for effects that happen on the loop thread).
func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<500 {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
