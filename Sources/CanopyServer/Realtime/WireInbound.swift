// WireInbound -- decodes one reassembled client message into what a session acts on (Protocol.md#Framing).
//
//   {"t":"c","d":{"t":<control>, ...}}              a control message (ping, end of transmission, ...)
//   {"t":"d","d":{"a":<action>,"r":<n>,"b":<body>}} a request; `r` is optional, `b` defaults to `{}`
//
// Pure, so it is fuzzed on its own (Tests/Fuzz/Wire): a message that is not JSON, or lacks `t` or `d`, is
// malformed (the session closes with 1002); a data message without a string action is ignored.

import CanopyCore

/// A client message, decoded.
enum WireInbound: Equatable {
    /// A control message and its type (`p` ping, `n` end of transmission; nil or others are ignored).
    case control(String?)
    /// A request: its action, request number and body.
    case request(action: String, request: Int64?, body: JSONValue)
    /// A data message without an action, or a message of another type: nothing to do.
    case ignored

    /// Decodes `text`; nil when it is malformed.
    static func decode(_ text: String) -> WireInbound? {
        guard let message = try? JSONValue.parse(text), let type = message[Wire.Key.type]?.stringValue,
            let body = message[Wire.Key.data]
        else { return nil }
        if type == Wire.MessageType.control { return .control(body[Wire.Key.type]?.stringValue) }
        guard type == Wire.MessageType.data, let action = body[Wire.Key.action]?.stringValue else { return .ignored }
        return .request(
            action: action, request: body[Wire.Key.request]?.int64Value, body: body[Wire.Key.body] ?? .object([]))
    }
}
