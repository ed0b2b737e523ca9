// HTTPServerLimitTests -- backpressure and the hard output limit (in memory), dropped responders and garbage input.
import CanopyNet
import Foundation
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(1))) struct HTTPServerLimitTests {
    @Test func pipeliningPausesAtTheLimitAndResumesInOrder() throws {
        var limits = HTTPServerLimits()
        limits.maxPipelinedRequests = 2
        var parked: [(String, HTTPResponder)] = []
        var handled = 0
        let harness = try ConnectionHarness(limits: limits) { request, responder in
            handled += 1
            parked.append((request.path, responder))
        }
        let peer = try harness.connect()
        peer.send((1...5).map { "GET /\($0) HTTP/1.1\r\n\r\n" }.joined())
        #expect(handled == 2)  // the loop is quiet: the third request waits for an answer
        var bodies: [String] = []
        while bodies.count < 5 {
            try #require(!parked.isEmpty)
            for (path, responder) in parked { responder.respond(HTTPResponse(status: 200, body: Array(path.utf8))) }
            parked.removeAll()
            harness.run()
            while let response = try peer.response() { bodies.append(response.bodyText) }
        }
        #expect(bodies == ["/1", "/2", "/3", "/4", "/5"])
        #expect(handled == 5)
    }

    @Test func droppedResponderAnswers500() throws {
        let server = try TestServer { _, _ in }
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send("GET /a HTTP/1.1\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 500)
        #expect(response.bodyText.hasPrefix("{\"error\":"))
    }

    @Test func garbageNeverTakesTheServerDown() throws {
        let server = try TestServer { request, responder in
            responder.respond(HTTPResponse(status: 200, body: Array(request.path.utf8)))
        }
        defer { server.stop() }
        var seed: UInt64 = 7
        for _ in 0..<30 {
            let client = try TestClient(port: server.port)
            var bytes: [UInt8] = Array("GET / HTTP/1.1\r\n".utf8)
            for _ in 0..<512 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes.append(UInt8(truncatingIfNeeded: seed >> 56))
            }
            try? client.send(bytes)
        }
        let client = try TestClient(port: server.port)
        try client.send("GET /alive HTTP/1.1\r\n\r\n")
        #expect(try client.readResponse().bodyText == "/alive")
    }

    @Test func webSocketThatDoesNotReadIsClosedAtTheHardLimit() throws {
        var closed = 0
        var limits = HTTPServerLimits()
        limits.outputHardLimitBytes = 256 * 1024
        var pumped = 0
        var harnessLoop: EventLoop?
        let harness = try ConnectionHarness(limits: limits) { request, responder in
            guard let socket = responder.upgradeToWebSocket(request) else { return }
            socket.onClose = { closed += 1 }
            let text = String(repeating: "x", count: 128 * 1024)
            func pump() {
                guard !socket.isClosed else { return }
                socket.send(text: text)
                pumped += 1
                harnessLoop!.schedule(afterMilliseconds: 1) { pump() }
            }
            pump()
        }
        harnessLoop = harness.loop
        let peer = try harness.connect(sendBufferBytes: 64 * 1024)
        peer.send(WebSocketConnectionTests.upgrade)  // and never reads again
        for _ in 0..<1_000 where closed == 0 { harness.advance(byMilliseconds: 1) }
        #expect(closed == 1)
        #expect(harness.server.slowConsumersDisconnected == 1)
        #expect(pumped < 1_000)
    }
}
