// WebSocketHandshake -- validates an opening handshake and builds the 101 response (RFC 6455 §4.2).
//
// Sec-WebSocket-Accept = base64( SHA-1( Sec-WebSocket-Key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11" ) ).
// Extensions (permessage-deflate) and subprotocols are declined by omission: the response names neither,
// which RFC 6455 §9.1 and RFC 7692 §5 define as "not negotiated", and clients then send plain frames.
import CCrypto

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
        let input = Array((key + magicGUID).utf8)
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        _ = input.withUnsafeBufferPointer { SHA1($0.baseAddress, $0.count, &digest) }
        return base64(digest)
    }

    /// The `101 Switching Protocols` response bytes.
    static func response(accept: String) -> [UInt8] {
        Array(
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(accept)\r\n\r\n").utf8)
    }

    /// A key is base64 of 16 bytes: 22 alphabet characters followed by "==".
    private static func isValidKey(_ key: Substring) -> Bool {
        let bytes = Array(key.utf8)
        guard bytes.count == 24, bytes[22] == UInt8(ascii: "="), bytes[23] == UInt8(ascii: "=") else { return false }
        return bytes[0..<22].allSatisfy { alphabet.contains($0) }
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func base64(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let b0 = UInt32(bytes[index])
            let b1 = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            let b2 = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
            let triple = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(triple >> 18 & 0x3F)])
            out.append(alphabet[Int(triple >> 12 & 0x3F)])
            out.append(index + 1 < bytes.count ? alphabet[Int(triple >> 6 & 0x3F)] : UInt8(ascii: "="))
            out.append(index + 2 < bytes.count ? alphabet[Int(triple & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension HTTPRequest {
    /// True when the request asks to switch to WebSocket (`Upgrade: websocket`); validate it with
    /// ``HTTPResponder/upgradeToWebSocket(_:limits:)``.
    public var isWebSocketUpgrade: Bool {
        headers.containsToken("websocket", in: "Upgrade")
    }
}
