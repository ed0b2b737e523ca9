// WebSocketHandshake -- validates an opening handshake and builds the 101 response (RFC 6455 §4.2).
//
// Sec-WebSocket-Accept = base64( SHA-1( Sec-WebSocket-Key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11" ) ).
// Extensions (permessage-deflate) and subprotocols are declined by omission: the response names neither,
// which RFC 6455 §9.1 and RFC 7692 §5 define as "not negotiated", and clients then send plain frames.
// The digest and the base64 codec are CanopyCore's (`Hash`, `Base64`), the same ones Firebase data hashes use.
import CanopyCore

/// The server side of the WebSocket opening handshake.
public enum WebSocketHandshake {
    static let magicGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// Checks `request` is a valid version-13 opening handshake.
    /// - Returns: the `Sec-WebSocket-Accept` value for the response.
    /// - Throws: ``WebSocketHandshakeError``.
    public static func validate(_ request: HTTPRequest) throws(WebSocketHandshakeError) -> String {
        guard request.method == "GET", request.version == .http11 else { throw .notGET }
        guard request.headers.containsToken("websocket", in: "Upgrade"),
            request.headers.containsToken("upgrade", in: "Connection")
        else { throw .notAnUpgrade }
        guard let version = request.header("Sec-WebSocket-Version"), version.trimmingSpacesAndTabs() == "13" else {
            throw .unsupportedVersion
        }
        guard let key = request.header("Sec-WebSocket-Key")?.trimmingSpacesAndTabs(), isValidKey(key) else {
            throw .invalidKey
        }
        return acceptValue(forKey: String(key))
    }

    /// The `Sec-WebSocket-Accept` value for a client key.
    public static func acceptValue(forKey key: String) -> String {
        Hash.sha1Base64(key + magicGUID)
    }

    /// A fresh client key: base64 of 16 random bytes.
    static func makeKey(using generator: inout some RandomNumberGenerator) -> String {
        Base64.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// The `101 Switching Protocols` response bytes.
    static func response(accept: String) -> [UInt8] {
        Array(
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(accept)\r\n\r\n").utf8)
    }

    /// A key is the base64 form of 16 bytes (24 characters, ending "=="), decoded strictly.
    private static func isValidKey(_ key: Substring) -> Bool {
        Base64.decode(key, url: false)?.count == 16
    }
}

extension HTTPRequest {
    /// True when the request asks to switch to WebSocket (`Upgrade: websocket`); validate it with
    /// ``HTTPResponder/upgradeToWebSocket(_:limits:)``.
    public var isWebSocketUpgrade: Bool {
        headers.containsToken("websocket", in: "Upgrade")
    }
}
