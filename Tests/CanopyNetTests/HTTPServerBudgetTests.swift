// HTTPServerBudgetTests -- requests refused from their head, the body budget shared by every connection, and the
// output budget shared by every stream (in memory, on a hand-driven loop).
import CanopyNet
import Foundation
import Testing

@Suite(.timeLimit(.minutes(1))) struct HTTPServerBudgetTests {
    private static let denied = HTTPResponse.error(status: 401, message: "Permission denied")

    @Test func aRefusedHeadIsAnsweredBeforeItsBodyWhichIsThenDropped() throws {
        var handled: [String] = []
        let refusal: (HTTPRequest) -> HTTPResponse? = { $0.path == "/denied" ? Self.denied : nil }
        let harness = try ConnectionHarness(refusal: refusal) { request, responder in
            handled.append(request.path)
            responder.respond(HTTPResponse(status: 200, body: request.body))
        }
        let peer = try harness.connect()
        peer.send("PUT /denied HTTP/1.1\r\nContent-Length: 300000\r\n\r\n")
        let refused = try #require(try peer.response(), "answered before any of the body was sent")
        #expect(refused.status == 401)
        #expect(refused.bodyText == #"{"error":"Permission denied"}"#)
        #expect(harness.server.bodyBudget.usedBytes == 0)
        peer.send([UInt8](repeating: 0x61, count: 300_000))  // read and dropped
        peer.send("PUT /ok HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi")
        let ok = try #require(try peer.response())
        #expect(ok.status == 200 && ok.bodyText == "hi")
        #expect(handled == ["/ok"])
        #expect(!peer.isClosed)
    }

    @Test func aRefusedHeadThatExpectsContinueGetsNoContinueAndTheConnectionCloses() throws {
        let harness = try ConnectionHarness(refusal: { _ in Self.denied }) { _, responder in
            responder.respond(HTTPResponse(status: 200))
        }
        let peer = try harness.connect()
        peer.send("PUT /a HTTP/1.1\r\nContent-Length: 5000000\r\nExpect: 100-continue\r\n\r\n")
        let text = peer.receivedText()
        #expect(text.hasPrefix("HTTP/1.1 401 "))
        #expect(!text.contains("100 Continue"))
        #expect(text.lowercased().contains("connection: close"))
        harness.advance(byMilliseconds: HTTPServerLimits().lingerTimeoutMs + 1)
        #expect(peer.isClosed)
    }

    @Test func anAcceptedHeadThatExpectsContinueGetsItsContinue() throws {
        let harness = try ConnectionHarness { request, responder in
            responder.respond(HTTPResponse(status: 200, body: request.body))
        }
        let peer = try harness.connect()
        peer.send("PUT /a HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        #expect(peer.receivedText().hasPrefix("HTTP/1.1 100 Continue\r\n"))
        peer.send("ok")
        #expect(try peer.response()?.bodyText == "ok")
    }

    @Test func aBodyThatDoesNotFitWithTheOthersInFlightIsRefused503BeforeItIsRead() throws {
        var limits = HTTPServerLimits()
        limits.maxBodyMemoryBytes = 1000
        var parked: [(HTTPRequest, HTTPResponder)] = []
        let harness = try ConnectionHarness(limits: limits) { request, responder in
            parked.append((request, responder))
        }
        let first = try harness.connect()
        let second = try harness.connect()
        first.send("PUT /a HTTP/1.1\r\nContent-Length: 800\r\n\r\n" + String(repeating: "a", count: 100))
        #expect(harness.server.bodyBudget.usedBytes == 800)  // the declared length is charged at once
        second.send("PUT /b HTTP/1.1\r\nContent-Length: 800\r\n\r\n")
        let refused = try #require(try second.response())
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") == "1")
        #expect(refused.bodyText.hasPrefix(#"{"error":"#))
        #expect(harness.server.bodyMemoryRefusals == 1)
        first.send(String(repeating: "a", count: 700))
        #expect(parked.count == 1)
        // Charged while the handler holds the request, given back once it lets go.
        #expect(harness.server.bodyBudget.usedBytes == 800)
        for (_, responder) in parked { responder.respond(HTTPResponse(status: 200)) }
        parked.removeAll()
        harness.run()
        #expect(harness.server.bodyBudget.usedBytes == 0)
        // The refused connection dropped its body and goes on; now its next body fits.
        second.send(String(repeating: "b", count: 800) + "PUT /c HTTP/1.1\r\nContent-Length: 800\r\n\r\n")
        second.send(String(repeating: "c", count: 800))
        #expect(parked.map(\.0.path) == ["/c"])
        #expect(!second.isClosed)
    }

    @Test func aChunkedBodyThatOutgrowsTheBudgetIsRefused503AndTheConnectionCloses() throws {
        var limits = HTTPServerLimits()
        limits.maxBodyMemoryBytes = 1000
        var handled = 0
        let harness = try ConnectionHarness(limits: limits) { _, responder in
            handled += 1
            responder.respond(HTTPResponse(status: 200))
        }
        let peer = try harness.connect()
        peer.send("PUT /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
        peer.send("258\r\n" + String(repeating: "a", count: 600) + "\r\n")
        #expect(harness.server.bodyBudget.usedBytes == 600)
        peer.send("258\r\n" + String(repeating: "a", count: 600) + "\r\n")
        let refused = try #require(try peer.response())
        #expect(refused.status == 503)
        #expect(harness.server.bodyBudget.usedBytes == 0)
        #expect(handled == 0)
        harness.advance(byMilliseconds: HTTPServerLimits().lingerTimeoutMs + 1)
        #expect(peer.isClosed)
    }

    @Test func pastTheOutputBudgetTheLargestBacklogsAreClosedFirst() throws {
        var limits = HTTPServerLimits()
        limits.outputHardLimitBytes = 64 << 20  // far above: only the budget over all streams applies
        limits.outputMemoryLimitBytes = 1 << 20
        var streams: [String: HTTPStream] = [:]
        var closed: [String] = []
        let harness = try ConnectionHarness(limits: limits) { request, responder in
            let stream = responder.startStream(status: 200, headers: [])
            stream.onClose = { closed.append(request.path) }
            streams[request.path] = stream
        }
        var peers: [ConnectionHarness.Peer] = []
        for path in ["/a", "/b", "/c"] {
            let peer = try harness.connect(sendBufferBytes: 4096)
            peer.send("GET \(path) HTTP/1.1\r\n\r\n")  // and never reads
            peers.append(peer)
        }
        try #require(streams.count == 3)
        streams["/b"]!.send([UInt8](repeating: 0x62, count: 700 * 1024))
        streams["/a"]!.send([UInt8](repeating: 0x61, count: 300 * 1024))
        streams["/c"]!.send([UInt8](repeating: 0x63, count: 200 * 1024))
        harness.run()
        #expect(closed == ["/b"])
        #expect(harness.server.outputBudgetDisconnects == 1)
        #expect(harness.server.streamingBacklogBytes <= 1 << 20)
        // Under the budget again: the others keep their streams.
        streams["/a"]!.send([UInt8](repeating: 0x61, count: 100 * 1024))
        harness.run()
        #expect(closed == ["/b"])
        #expect(peers[1].isClosed && !peers[0].isClosed && !peers[2].isClosed)
    }

    @Test func aWebSocketMessageThatDoesNotFitInTheBodyBudgetClosesItsConnectionWith1013() throws {
        var limits = HTTPServerLimits()
        limits.maxBodyMemoryBytes = 1000
        var texts: [String] = []
        var closed = 0
        let harness = try ConnectionHarness(limits: limits) { request, responder in
            guard let socket = responder.upgradeToWebSocket(request) else { return }
            socket.onText = { texts.append($0) }
            socket.onClose = { closed += 1 }
        }
        let peer = try harness.connect()
        peer.send(WebSocketConnectionTests.upgrade)
        _ = peer.received()
        var small: [UInt8] = []
        WebSocketFrameEncoder.encode(.text, payload: Array("hello".utf8), maskingKey: [1, 2, 3, 4], into: &small)
        peer.send(small)
        #expect(texts == ["hello"])
        #expect(harness.server.bodyBudget.usedBytes == 0)
        var big: [UInt8] = []
        WebSocketFrameEncoder.encode(
            .text, payload: [UInt8](repeating: 0x61, count: 1500), maskingKey: [1, 2, 3, 4], into: &big)
        peer.send(Array(big.prefix(600)))
        #expect(harness.server.bodyBudget.usedBytes >= 600)  // held while the frame arrives
        peer.send(Array(big.dropFirst(600)))
        let reply = peer.received()
        #expect(reply.starts(with: [0x88, 0x02, 0x03, 0xF5]))  // close, 1013 (try again later)
        #expect(closed == 1)
        #expect(harness.server.bodyBudget.usedBytes == 0)
        #expect(texts == ["hello"])
    }
}
