// WebSocketError -- why a WebSocket peer's frames were refused, and the close code that answers it.
import CanopyCore

/// A frame or message the WebSocket decoder refuses. The connection answers with a close frame
/// carrying ``closeCode`` and then closes (RFC 6455 §7.4.1).
public enum WebSocketError: CanopyError, Equatable {
    /// The frames break RFC 6455 framing rules (1002).
    case protocolError(reason: String)
    /// A text message or close reason is not valid UTF-8 (1007).
    case invalidUTF8
    /// A message exceeds the configured maximum (1009).
    case messageTooBig

    /// The close status code sent to the peer.
    public var closeCode: UInt16 {
        switch self {
        case .protocolError: 1002
        case .invalidUTF8: 1007
        case .messageTooBig: 1009
        }
    }

    public var code: String {
        switch self {
        case .protocolError: "websocket_protocol_error"
        case .invalidUTF8: "websocket_invalid_utf8"
        case .messageTooBig: "websocket_message_too_big"
        }
    }

    public var userMessage: String {
        switch self {
        case .protocolError(let reason): "WebSocket protocol error: \(reason)."
        case .invalidUTF8: "WebSocket text is not valid UTF-8."
        case .messageTooBig: "WebSocket message too big."
        }
    }
}

/// Why an upgrade request is not a valid WebSocket opening handshake (RFC 6455 §4.2.1).
public enum WebSocketHandshakeError: CanopyError, Equatable {
    /// Not `GET` over HTTP/1.1.
    case notGET
    /// `Upgrade: websocket` or `Connection: Upgrade` is missing.
    case notAnUpgrade
    /// `Sec-WebSocket-Key` is missing or not the base64 form of 16 bytes.
    case invalidKey
    /// `Sec-WebSocket-Version` is not 13 (answered with 426 and the supported version).
    case unsupportedVersion

    /// The HTTP status that answers the failed handshake.
    public var status: Int { self == .unsupportedVersion ? 426 : 400 }

    public var code: String { "websocket_handshake_failed" }

    public var userMessage: String {
        switch self {
        case .notGET: "A WebSocket upgrade must be an HTTP/1.1 GET request."
        case .notAnUpgrade: "Missing 'Upgrade: websocket' or 'Connection: Upgrade'."
        case .invalidKey: "Missing or invalid Sec-WebSocket-Key."
        case .unsupportedVersion: "Unsupported WebSocket version; use 13."
        }
    }
}
