// HTTPConnectionTimeoutTests -- every connection timeout, in memory with a manual clock: nothing fires a
// millisecond early, and each fires exactly at its deadline.
import CanopyNet
import Testing

@Suite(.timeLimit(.minutes(1))) struct HTTPConnectionTimeoutTests {
    static func echo(_ request: HTTPRequest, _ responder: HTTPResponder) {
        responder.respond(HTTPResponse(status: 200, body: Array("\(request.method) \(request.path)".utf8)))
    }

    /// An echo server in memory with `configure`d limits, and one connection to it.
    func echoConnection(_ configure: (inout HTTPServerLimits) -> Void) throws
        -> (ConnectionHarness, ConnectionHarness.Peer)
    {
        var limits = HTTPServerLimits()
        configure(&limits)
        let harness = try ConnectionHarness(limits: limits, handler: Self.echo)
        return (harness, try harness.connect())
    }

    @Test func anIdleKeepAliveConnectionClosesSilentlyAtTheIdleTimeout() throws {
        let (harness, peer) = try echoConnection { $0.idleTimeoutMs = 5_000 }
        peer.send("GET /a HTTP/1.1\r\n\r\n")
        #expect(try peer.response()?.status == 200)
        harness.advance(byMilliseconds: 4_999)
        #expect(!peer.isClosed)
        harness.advance(byMilliseconds: 1)
        #expect(peer.isClosed)
        #expect(peer.received().isEmpty)  // no 408 for an idle connection
        #expect(harness.server.connectionCount == 0)
    }

    @Test func aFreshConnectionMustStartWithinTheHeadTimeout() throws {
        let (harness, peer) = try echoConnection { $0.headerTimeoutMs = 1_000; $0.idleTimeoutMs = 60_000 }
        harness.advance(byMilliseconds: 999)
        #expect(!peer.isClosed)
        harness.advance(byMilliseconds: 1)
        #expect(peer.isClosed)
    }

    @Test func aSlowHeadGets408ThenLingersUntilTheLingerTimeout() throws {
        let (harness, peer) = try echoConnection { $0.headerTimeoutMs = 10_000; $0.lingerTimeoutMs = 2_000 }
        peer.send("GET / HTTP/1.1\r\nHost: x\r\n")  // never finishes the head
        harness.advance(byMilliseconds: 9_999)
        #expect(try peer.response() == nil)
        harness.advance(byMilliseconds: 1)
        let response = try #require(try peer.response())
        #expect(response.status == 408)
        #expect(response.header("Content-Type")?.hasPrefix("application/json") == true)
        #expect(response.header("Connection") == "close")
        // The write side is shut (the client reads end of file) while the server keeps discarding input.
        #expect(peer.isClosed)
        peer.send("more bytes the server reads and drops")
        #expect(harness.server.connectionCount == 1)
        harness.advance(byMilliseconds: 1_999)
        #expect(harness.server.connectionCount == 1)
        harness.advance(byMilliseconds: 1)
        #expect(harness.server.connectionCount == 0)
    }

    @Test func aBodyThatKeepsMovingIsGivenTimeAndOneThatStallsGets408() throws {
        let (harness, peer) = try echoConnection { $0.bodyTimeoutMs = 1_000 }
        peer.send("PUT /a HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
        for _ in 0..<3 {
            harness.advance(byMilliseconds: 900)
            peer.send("d")  // progress: the timer re-arms for what remains from here
        }
        #expect(try peer.response() == nil)
        harness.advance(byMilliseconds: 999)
        #expect(try peer.response() == nil)
        harness.advance(byMilliseconds: 1)
        #expect(try peer.response()?.status == 408)
    }

    @Test func aSilentWebSocketIsToldToGoAwayAtTheIdleTimeout() throws {
        var limits = HTTPServerLimits()
        limits.idleTimeoutMs = 30_000
        let harness = try ConnectionHarness(limits: limits) { request, responder in
            _ = responder.upgradeToWebSocket(request)
        }
        let peer = try harness.connect()
        peer.send(WebSocketConnectionTests.upgrade)
        #expect(try peer.response()?.status == 101)
        harness.advance(byMilliseconds: 29_999)
        #expect(peer.received().isEmpty)
        harness.advance(byMilliseconds: 1)
        // A close frame with 1001 (going away): 0x88, length 2, 0x03 0xE9.
        #expect(peer.received() == [0x88, 0x02, 0x03, 0xE9])
    }

    @Test func aGracefulShutdownForceClosesWhatIsStillOpenAtItsDeadline() throws {
        var limits = HTTPServerLimits()
        limits.shutdownTimeoutMs = 10_000
        var parked: [HTTPResponder] = []
        let harness = try ConnectionHarness(limits: limits) { _, responder in parked.append(responder) }
        let peer = try harness.connect()
        peer.send("GET /stuck HTTP/1.1\r\n\r\n")
        #expect(parked.count == 1)
        var finished = false
        harness.server.shutdown(graceful: true) { finished = true }
        harness.run()
        harness.advance(byMilliseconds: 9_999)
        #expect(!peer.isClosed)
        #expect(!finished)
        harness.advance(byMilliseconds: 1)
        #expect(peer.isClosed)
        #expect(finished)
    }
}
