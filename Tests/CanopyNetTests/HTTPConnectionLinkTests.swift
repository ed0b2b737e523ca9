// HTTPConnectionLinkTests -- what outlives a connection (a responder a handler keeps, a stream) reaches it through
// its `ConnectionLink`, not a weak reference: the connection must still be freed when it closes, and everything
// kept must then see it gone and do nothing.
@testable import CanopyNet
import Testing

@Suite(.timeLimit(.minutes(1))) struct HTTPConnectionLinkTests {
    @Test func aResponderKeptPastItsConnectionSeesItGoneAndAnswersNothing() throws {
        var parked: [HTTPResponder] = []
        let harness = try ConnectionHarness { request, responder in
            if request.path == "/park" {
                parked.append(responder)
            } else {
                responder.respond(HTTPResponse(status: 200, body: Array("fresh".utf8)))
            }
        }
        var peer: ConnectionHarness.Peer? = try harness.connect()
        peer?.send("GET /park HTTP/1.1\r\n\r\n")
        let responder = try #require(parked.first)
        let link = try #require(responder.connection?.link)
        #expect(link.isAlive)
        #expect(!responder.isClosed)

        peer = nil  // the client goes away
        harness.run()
        #expect(harness.server.connectionCount == 0)
        // The kept responder holds the link, not the connection: the connection was freed, and said so.
        #expect(!link.isAlive)
        #expect(link.target == nil)
        #expect(responder.connection == nil)
        #expect(responder.isClosed)
        responder.respond(HTTPResponse(status: 200, body: Array("late".utf8)))  // dropped, not a crash
        harness.run()

        let next = try harness.connect()
        next.send("GET /other HTTP/1.1\r\n\r\n")
        let answer = try #require(try next.response())
        #expect(answer.status == 200)
        #expect(answer.bodyText == "fresh")
    }

    @Test func aStreamKeptPastItsConnectionSeesItGone() throws {
        var streams: [HTTPStream] = []
        let harness = try ConnectionHarness { _, responder in
            streams.append(responder.startStream(status: 200, headers: [("Content-Type", "text/event-stream")]))
        }
        var peer: ConnectionHarness.Peer? = try harness.connect()
        peer?.send("GET /events HTTP/1.1\r\n\r\n")
        let stream = try #require(streams.first)
        stream.send(Array("data: one\n\n".utf8))
        harness.run()
        #expect(peer?.receivedText().contains("data: one") == true)
        #expect(!stream.isClosed)

        peer = nil
        harness.run()
        #expect(harness.server.connectionCount == 0)
        #expect(stream.isClosed)
        stream.send(Array("data: two\n\n".utf8))  // dropped, not a crash
        harness.run()
    }
}
