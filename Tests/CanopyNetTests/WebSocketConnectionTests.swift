// WebSocketConnectionTests -- live upgrades over real sockets: echo, ping, close handshake, protocol errors.
import CanopyNet
import Foundation
import Testing

@Suite(.timeLimit(.minutes(1))) struct WebSocketConnectionTests {
    static let upgrade =
        "GET /.ws?v=5&ns=demo HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        + "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"

    /// An echo server: text messages come back upper-cased; "bye" makes the server close with 4000.
    static func makeServer(closed: Counter, limits: WebSocketLimits = WebSocketLimits()) throws -> TestServer {
        try TestServer { request, responder in
            guard request.path == "/.ws" else {
                responder.respond(HTTPResponse(status: 200, body: Array("plain".utf8)))
                return
            }
            guard let socket = responder.upgradeToWebSocket(request, limits: limits) else { return }
            socket.onText = { [unowned socket] text in
                if text == "bye" {
                    socket.close(code: 4000, reason: "done")
                } else if text == "burst" {
                    for index in 1...3 { socket.send(text: "B\(index)") }  // one loop pass: one write
                } else {
                    socket.send(text: text.uppercased())
                }
            }
            socket.onClose = { closed.increment() }
        }
    }

    @Test func upgradeDeclinesDeflateAndEchoesMessages() throws {
        let closed = Counter()
        let server = try Self.makeServer(closed: closed)
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send(Self.upgrade)
        let response = try client.readResponse()
        #expect(response.status == 101)
        #expect(response.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(response.header("Sec-WebSocket-Extensions") == nil)
        try client.send(clientFrame(.text, Array("hello".utf8)) + clientFrame(.ping, [7]))
        let echo = try client.readFrame()
        #expect(echo.first == 0x81)
        #expect(echo.payload == Array("HELLO".utf8))
        let pong = try client.readFrame()
        #expect(pong.first == 0x8A && pong.payload == [7])
        // Client-initiated close: the server echoes the code and closes the socket.
        try client.send(clientFrame(.close, WebSocketFrameEncoder.closePayload(code: 1000)))
        let close = try client.readFrame()
        #expect(close.first == 0x88 && close.payload == [0x03, 0xE8])
        #expect(client.waitForClose())
        #expect(eventually { closed.value == 1 })
    }

    @Test func framesSentRightBehindTheUpgradeAreNotLost() throws {
        let server = try Self.makeServer(closed: Counter())
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send(Array(Self.upgrade.utf8) + clientFrame(.text, Array("early".utf8)))
        #expect(try client.readResponse().status == 101)
        #expect(try client.readFrame().payload == Array("EARLY".utf8))
    }

    @Test func serverCloseSendsCodeAndDoesNotCallOnClose() throws {
        let closed = Counter()
        let server = try Self.makeServer(closed: closed)
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send(Self.upgrade)
        _ = try client.readResponse()
        try client.send(clientFrame(.text, Array("bye".utf8)))
        let close = try client.readFrame()
        #expect(close.first == 0x88 && close.payload == [0x0F, 0xA0] + Array("done".utf8))
        try client.send(clientFrame(.close, [0x0F, 0xA0]))
        #expect(client.waitForClose())
        #expect(closed.value == 0)
    }

    @Test(
        arguments: [
            ([0x81, 0x02, 0x68, 0x69], UInt16(1002)),  // unmasked
            (clientFrame(.text, [0xFF]), 1007),
            (clientFrame(.binary, [UInt8](repeating: 1, count: 100)), 1009),
        ] as [([UInt8], UInt16)])
    func badFramesCloseWithTheirCode(frame: [UInt8], code: UInt16) throws {
        let closed = Counter()
        var limits = WebSocketLimits()
        limits.maxMessageBytes = 64
        let server = try Self.makeServer(closed: closed, limits: limits)
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send(Self.upgrade)
        _ = try client.readResponse()
        try client.send(frame)
        let close = try client.readFrame()
        #expect(close.first == 0x88)
        #expect(close.payload.count >= 2 && UInt16(close.payload[0]) << 8 | UInt16(close.payload[1]) == code)
        #expect(client.waitForClose())
        #expect(eventually { closed.value == 1 })
    }

    @Test func wrongVersionGets426AndTheConnectionStaysUsable() throws {
        let server = try Self.makeServer(closed: Counter())
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send(Self.upgrade.replacingOccurrences(of: "Version: 13", with: "Version: 8"))
        let response = try client.readResponse()
        #expect(response.status == 426)
        #expect(response.header("Sec-WebSocket-Version") == "13")
        try client.send("GET /plain HTTP/1.1\r\n\r\n")
        #expect(try client.readResponse().bodyText == "plain")
    }

    @Test func gracefulShutdownSendsGoingAway() throws {
        let closed = Counter()
        let server = try Self.makeServer(closed: closed)
        let client = try TestClient(port: server.port)
        try client.send(Self.upgrade)
        _ = try client.readResponse()
        server.stop(graceful: true)
        let close = try client.readFrame()
        #expect(close.first == 0x88 && close.payload == [0x03, 0xE9])
        #expect(closed.value == 1)
    }
}
