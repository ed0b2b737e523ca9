// HTTPServerLimitTests -- live tests of backpressure, forced shutdown, dropped responders and garbage input.
import CanopyNet
import Foundation
import Synchronization
import Testing

/// Responders parked by a handler until the test releases them (touched only on the loop).
final class ParkedResponders: @unchecked Sendable {  // safe: `parked` is used only on the server's loop
    var parked: [(String, HTTPResponder)] = []
    let handled = Counter()
}

@Suite(.timeLimit(.minutes(1))) struct HTTPServerLimitTests {
    @Test func pipeliningPausesAtTheLimitAndResumesInOrder() throws {
        var limits = HTTPServerLimits()
        limits.maxPipelinedRequests = 2
        let box = ParkedResponders()
        let server = try TestServer(limits: limits) { request, responder in
            box.handled.increment()
            box.parked.append((request.path, responder))
        }
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send((1...5).map { "GET /\($0) HTTP/1.1\r\n\r\n" }.joined())
        #expect(eventually { box.handled.value == 2 })
        usleep(100_000)
        #expect(box.handled.value == 2)  // the third request waits for an answer
        var released = 0
        while released < 5 {
            #expect(eventually { server.onLoop { [box] in box.parked.count } > 0 })
            released += server.onLoop { [box] in
                let answered = box.parked.count
                for (path, responder) in box.parked {
                    responder.respond(HTTPResponse(status: 200, body: Array(path.utf8)))
                }
                box.parked.removeAll()
                return answered
            }
        }
        let bodies = try (1...5).map { _ in try client.readResponse().bodyText }
        #expect(bodies == ["/1", "/2", "/3", "/4", "/5"])
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

    @Test func gracefulShutdownForceClosesAfterItsDeadline() throws {
        var limits = HTTPServerLimits()
        limits.shutdownTimeoutMs = 150
        let box = ParkedResponders()
        let server = try TestServer(limits: limits) { request, responder in
            box.handled.increment()
            box.parked.append((request.path, responder))  // never answered
        }
        let client = try TestClient(port: server.port)
        try client.send("GET /stuck HTTP/1.1\r\n\r\n")
        #expect(eventually { box.handled.value == 1 })
        server.stop(graceful: true)  // returns once the loop has stopped
        #expect(client.waitForClose())
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
        let closed = Counter()
        var limits = HTTPServerLimits()
        limits.outputHardLimitBytes = 256 * 1024
        var loopRef: EventLoop?
        let server = try TestServer(limits: limits) { request, responder in
            guard let socket = responder.upgradeToWebSocket(request) else { return }
            socket.onClose = { closed.increment() }
            let text = String(repeating: "x", count: 128 * 1024)
            func pump() {
                guard !socket.isClosed else { return }
                socket.send(text: text)
                loopRef!.schedule(afterMilliseconds: 1) { pump() }
            }
            pump()
        }
        loopRef = server.loop
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send(WebSocketConnectionTests.upgrade)
        #expect(eventually { closed.value == 1 })
    }
}
