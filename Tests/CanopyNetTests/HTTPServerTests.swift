// HTTPServerTests -- live tests of HTTPServer over real sockets on 127.0.0.1 with a blocking test client.
import CanopyNet
import Foundation
import Testing

@Suite(.timeLimit(.minutes(1))) struct HTTPServerTests {
    /// Echoes method, path and body; `/slow?ms=N` answers after N ms.
    static func echo(_ request: HTTPRequest, _ responder: HTTPResponder, loop: EventLoop) {
        let text = "\(request.method) \(request.path) \(String(decoding: request.body, as: UTF8.self))"
        let response = HTTPResponse(
            status: 200, headers: [("Content-Type", "text/plain"), ("X-Peer", request.remoteAddress)],
            body: Array(text.utf8))
        if request.path == "/slow", let delay = request.queryValue("ms").flatMap(Int64.init) {
            loop.schedule(afterMilliseconds: delay) { responder.respond(response) }
        } else {
            responder.respond(response)
        }
    }

    static func makeEchoServer(limits: HTTPServerLimits = HTTPServerLimits()) throws -> TestServer {
        var loopRef: EventLoop?
        let server = try TestServer(limits: limits) { request, responder in
            echo(request, responder, loop: loopRef!)
        }
        loopRef = server.loop
        return server
    }

    @Test func keepAliveServesSeveralRequestsOnOneConnection() throws {
        let server = try Self.makeEchoServer()
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        for index in 0..<3 {
            try client.send("GET /item/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.bodyText == "GET /item/\(index) ")
            #expect(response.header("X-Peer")?.hasPrefix("127.0.0.1:") == true)
            #expect(response.header("Connection") == nil)
        }
    }

    @Test func pipelinedResponsesKeepRequestOrderWhenCompletedOutOfOrder() throws {
        let server = try Self.makeEchoServer()
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send(
            "GET /slow?ms=150 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "POST /fast HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
                + "GET /slow?ms=50 HTTP/1.1\r\nHost: x\r\n\r\n")
        let bodies = try (0..<3).map { _ in try client.readResponse().bodyText }
        #expect(bodies == ["GET /slow ", "POST /fast hi", "GET /slow "])
    }

    @Test func expectContinueGetsInterimResponseBeforeBody() throws {
        let server = try Self.makeEchoServer()
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send("PUT /a.json HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let interim = try client.readResponse()
        #expect(interim.status == 100)
        try client.send("hello")
        let final = try client.readResponse()
        #expect(final.status == 200)
        #expect(final.bodyText == "PUT /a.json hello")
    }

    @Test func chunkedRequestBodyIsDechunked() throws {
        let server = try Self.makeEchoServer()
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send(
            "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nT: 1\r\n\r\n"
        )
        #expect(try client.readResponse().bodyText == "POST /c abcde")
    }

    @Test func oversizeBodyGets413WithoutReadingIt() throws {
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = 1000
        let server = try Self.makeEchoServer(limits: limits)
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send("PUT /big.json HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n")
        try client.send([UInt8](repeating: 0x61, count: 2000))
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.bodyText.contains("\"error\""))
        #expect(client.waitForClose())
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        ("GET / HTTP/1.1\r\nX: <20000 bytes>\r\n\r\n", 431),
        ("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nab", 400),
    ])
    func badRequestsGetJSONErrorsAndClose(raw: String, status: Int) throws {
        let server = try Self.makeEchoServer()
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send(raw.replacingOccurrences(of: "<20000 bytes>", with: String(repeating: "a", count: 20000)))
        let response = try client.readResponse()
        #expect(response.status == status)
        #expect(response.header("Content-Type") == "application/json; charset=utf-8")
        #expect(response.bodyText.hasPrefix("{\"error\":\""))
        #expect(client.waitForClose())
    }

    @Test func http10ClosesByDefaultAndKeepsAliveOnRequest() throws {
        let server = try Self.makeEchoServer()
        defer { server.stop() }
        let kept = try TestClient(port: server.port)
        try kept.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(try kept.readResponse().header("Connection") == "keep-alive")
        try kept.send("GET /b HTTP/1.0\r\n\r\n")
        let last = try kept.readResponse()
        #expect(last.bodyText == "GET /b ")
        #expect(last.header("Connection") == "close")
        #expect(kept.waitForClose())
    }

    @Test func connectionCloseRequestIsAnsweredThenClosed() throws {
        let server = try Self.makeEchoServer()
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send("GET /x HTTP/1.1\r\nConnection: close\r\n\r\nGET /ignored HTTP/1.1\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.header("Connection") == "close")
        #expect(client.waitForClose())
    }

    @Test func halfClosedClientStillGetsItsAnswers() throws {
        let server = try Self.makeEchoServer()
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send("GET /slow?ms=50 HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n")
        client.shutdownWrite()
        #expect(try client.readResponse().bodyText == "GET /slow ")
        let second = try client.readResponse()
        #expect(second.bodyText == "GET /b ")
        #expect(second.header("Connection") == "close")
        #expect(client.waitForClose())
    }

    @Test func connectionsBeyondTheLimitGet503() throws {
        var limits = HTTPServerLimits()
        limits.maxConnections = 1
        let server = try Self.makeEchoServer(limits: limits)
        defer { server.stop() }
        let first = try TestClient(port: server.port)
        try first.send("GET /a HTTP/1.1\r\n\r\n")
        #expect(try first.readResponse().status == 200)
        let second = try TestClient(port: server.port)
        #expect(try second.readResponse().status == 503)
        try first.send("GET /b HTTP/1.1\r\n\r\n")
        #expect(try first.readResponse().status == 200)
    }

    @Test func streamDeliversChunksAndReportsClientDisconnect() throws {
        let closed = Counter()
        var loopRef: EventLoop?
        let server = try TestServer { request, responder in
            let stream = responder.startStream(
                status: 200, headers: [("Content-Type", "text/event-stream; charset=utf-8")])
            stream.onClose = { closed.increment() }
            stream.send(Array("event: put\ndata: 1\n\n".utf8))
            loopRef!.schedule(afterMilliseconds: 20) { stream.send(Array("event: put\ndata: 2\n\n".utf8)) }
        }
        loopRef = server.loop
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send("GET /s.json HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n")
        let head = try client.readUntil("\r\n\r\n")
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.contains("Connection: close\r\n"))
        #expect(!head.contains("Content-Length"))
        #expect(try client.readUntil("data: 1\n\n") == "event: put\ndata: 1\n\n")
        #expect(try client.readUntil("data: 2\n\n") == "event: put\ndata: 2\n\n")
        #expect(closed.value == 0)
        client.shutdownWrite()
        #expect(eventually { closed.value == 1 })
        let remaining: Int = server.onLoop { [server] in server.server.connectionCount }
        #expect(remaining == 0)
    }

    @Test func streamClosedByOwnerEndsConnectionWithoutOnClose() throws {
        let closed = Counter()
        let server = try TestServer { _, responder in
            let stream = responder.startStream(status: 200, headers: [])
            stream.onClose = { closed.increment() }
            stream.send(Array("bye".utf8))
            stream.close()
        }
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send("GET / HTTP/1.1\r\n\r\n")
        let response = try client.readResponse()  // close-delimited: reads to EOF
        #expect(response.bodyText == "bye")
        #expect(closed.value == 0)
    }

    @Test func gracefulShutdownFinishesInFlightRequest() throws {
        let received = Counter()
        var loopRef: EventLoop?
        let server = try TestServer { _, responder in
            received.increment()
            loopRef!.schedule(afterMilliseconds: 200) {
                responder.respond(HTTPResponse(status: 200, body: Array("done".utf8)))
            }
        }
        loopRef = server.loop
        let busy = try TestClient(port: server.port)
        let idle = try TestClient(port: server.port)
        try idle.send("GET /warm HTTP/1.1\r\n\r\n")
        let warm = try idle.readResponse()
        #expect(warm.status == 200)
        try busy.send("GET /work HTTP/1.1\r\n\r\n")
        #expect(eventually { received.value == 2 })
        let done = Counter()
        server.loop.execute { [server] in
            server.server.shutdown(graceful: true) {
                done.increment()
                server.loop.stop()
            }
        }
        #expect(idle.waitForClose())
        let response = try busy.readResponse()
        #expect(response.bodyText == "done")
        #expect(response.header("Connection") == "close")
        #expect(busy.waitForClose())
        #expect(eventually { done.value == 1 })
        #expect(throws: (any Error).self) { try TestClient(port: server.port) }
    }

    @Test func streamToAClientThatDoesNotReadIsClosedAtTheHardLimit() throws {
        let closed = Counter()
        var limits = HTTPServerLimits()
        limits.outputHardLimitBytes = 256 * 1024
        var loopRef: EventLoop?
        let server = try TestServer(limits: limits) { _, responder in
            let stream = responder.startStream(status: 200, headers: [])
            stream.onClose = { closed.increment() }
            let chunk = [UInt8](repeating: 0x78, count: 128 * 1024)
            func pump() {
                guard !stream.isClosed else { return }
                stream.send(chunk)
                loopRef!.schedule(afterMilliseconds: 1) { pump() }
            }
            pump()
        }
        loopRef = server.loop
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send("GET /firehose HTTP/1.1\r\n\r\n")
        #expect(eventually { closed.value == 1 })
        let remaining: Int = server.onLoop { [server] in server.server.connectionCount }
        #expect(remaining == 0)
        // Counted (and logged with the running total).
        let dropped: Int = server.onLoop { [server] in server.server.slowConsumersDisconnected }
        #expect(dropped == 1)
    }
}
