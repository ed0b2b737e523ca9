// WebSocketHandshakeTests -- the opening handshake's validation and accept value.
import CanopyCore
import Testing

@testable import CanopyNet

@Suite struct WebSocketHandshakeTests {
    static func request(
        method: String = "GET", version: HTTPVersion = .http11, _ fields: [(name: String, value: String)]
    ) -> HTTPRequest {
        HTTPRequest(
            method: method, target: "/.ws?v=5", path: "/.ws", rawPath: "/.ws", query: [("v", "5")],
            headers: HTTPHeaders(fields), version: version)
    }

    static let valid: [(name: String, value: String)] = [
        ("Host", "127.0.0.1"), ("Upgrade", "websocket"), ("Connection", "keep-alive, Upgrade"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13"),
    ]

    @Test func rfcSampleKeyGivesTheRfcAcceptValue() throws {
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(try WebSocketHandshake.validate(Self.request(Self.valid)) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(Self.request(Self.valid).isWebSocketUpgrade)
        #expect(!Self.request([("Connection", "Upgrade")]).isWebSocketUpgrade)
    }

    @Test func clientKeysAreSixteenBytesTheServerAccepts() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let key = WebSocketHandshake.makeKey(using: &generator)
            #expect(Base64.decode(key, url: false)?.count == 16)
            var headers = Self.valid
            headers[3] = ("Sec-WebSocket-Key", key)
            #expect(try WebSocketHandshake.validate(Self.request(headers)) == WebSocketHandshake.acceptValue(forKey: key))
        }
    }

    @Test(arguments: [
        ("POST", "Upgrade", "websocket", "13", "dGhlIHNhbXBsZSBub25jZQ==", WebSocketHandshakeError.notGET),
        ("GET", "close", "websocket", "13", "dGhlIHNhbXBsZSBub25jZQ==", .notAnUpgrade),
        ("GET", "Upgrade", "h2c", "13", "dGhlIHNhbXBsZSBub25jZQ==", .notAnUpgrade),
        ("GET", "Upgrade", "websocket", "8", "dGhlIHNhbXBsZSBub25jZQ==", .unsupportedVersion),
        ("GET", "Upgrade", "websocket", "13", "short==", .invalidKey),
        ("GET", "Upgrade", "websocket", "13", "dGhlIHNhbXBsZSBub25jZQ=!", .invalidKey),
        ("GET", "Upgrade", "websocket", "13", "dGhlIHNhbXBsZSBub25jZQ", .invalidKey),
        ("GET", "Upgrade", "websocket", "13", "dGhlIHNhbXBsZSBub25jZQE=", .invalidKey),
    ])
    func invalidHandshakesAreRefused(
        method: String, connection: String, upgrade: String, version: String, key: String,
        expected: WebSocketHandshakeError
    ) {
        let request = Self.request(
            method: method,
            [
                ("Upgrade", upgrade), ("Connection", connection), ("Sec-WebSocket-Key", key),
                ("Sec-WebSocket-Version", version),
            ])
        #expect(throws: expected) { try WebSocketHandshake.validate(request) }
    }

    @Test func http10IsRefused() {
        #expect(throws: WebSocketHandshakeError.notGET) {
            try WebSocketHandshake.validate(Self.request(version: .http10, Self.valid))
        }
    }
}
