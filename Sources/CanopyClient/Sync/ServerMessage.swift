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
        guard let message = try? JSONValue.parse(text), let type = message[Wire.Key.type]?.stringValue,
            let body = message[Wire.Key.data]
        else { throw Malformed() }
        switch type {
        case Wire.MessageType.control:
            guard let kind = body[Wire.Key.type]?.stringValue else { throw Malformed() }
            let payload = body[Wire.Key.data] ?? .null
            if kind == Wire.Control.handshake {
                return .handshake(
                    timestamp: payload[Wire.Handshake.timestamp]?.int64Value,
                    session: payload[Wire.Handshake.session]?.stringValue)
            }
            return .control(type: kind, payload: payload)
        case Wire.MessageType.data:
            if let r = body[Wire.Key.request]?.int64Value {
                let b = body[Wire.Key.body] ?? .null
                guard let status = b[Wire.Key.status]?.stringValue else { throw Malformed() }
                return .reply(request: r, status: status, data: b[Wire.Key.data] ?? .null)
            }
            guard let action = body[Wire.Key.action]?.stringValue else { throw Malformed() }
            return .push(action: action, body: body[Wire.Key.body] ?? .object([]))
        default:
            throw Malformed()
        }
    }
}
