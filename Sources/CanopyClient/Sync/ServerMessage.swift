// ServerMessage -- parsing one reassembled server message of wire protocol v5 (Protocol.md#Control-messages,
// Protocol.md#Data-messages).

import CanopyCore

/// A message from the server, by kind.
enum ServerMessage: Sendable, Equatable {
    /// The handshake: server time (ms) and session id.
    case handshake(timestamp: Int64?, session: String?)
    /// Another control message (`r` reset, `s` shutdown, `o` pong, `e` error) and its payload.
    case control(type: String, payload: JSONValue)
    /// The answer to request `request`.
    case reply(request: Int64, status: String, data: JSONValue)
    /// A server push (`d`, `m`, `c`, `ac`, ...).
    case push(action: String, body: JSONValue)

    /// Why a message is unusable.
    struct Malformed: CanopyError, Equatable {
        var code: String { "malformed_message" }
        var userMessage: String { "The server sent a malformed wire message." }
    }

    /// Parses a message: the fuzzable entry point (text in, message or a typed error out).
    static func parse(_ text: String) throws(Malformed) -> ServerMessage {
        guard let message = try? JSONValue.parse(text), let type = message["t"]?.stringValue,
            let body = message["d"]
        else { throw Malformed() }
        switch type {
        case "c":
            guard let kind = body["t"]?.stringValue else { throw Malformed() }
            let payload = body["d"] ?? .null
            if kind == "h" {
                return .handshake(timestamp: payload["ts"]?.int64Value, session: payload["s"]?.stringValue)
            }
            return .control(type: kind, payload: payload)
        case "d":
            if let r = body["r"]?.int64Value {
                let b = body["b"] ?? .null
                guard let status = b["s"]?.stringValue else { throw Malformed() }
                return .reply(request: r, status: status, data: b["d"] ?? .null)
            }
            guard let action = body["a"]?.stringValue else { throw Malformed() }
            return .push(action: action, body: body["b"] ?? .object([]))
        default:
            throw Malformed()
        }
    }
}
