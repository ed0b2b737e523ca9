// ServerValue -- placeholders the server replaces with its own values when a write lands.

import CanopyCore

/// Server-side values for writes (`{".sv": …}`).
public enum ServerValue {
    /// The server's time in milliseconds since the epoch when the write is applied.
    public static let timestamp: JSONValue = [".sv": "timestamp"]

    /// The stored number plus `delta`, computed by the server. Such a write is never sent twice: if the
    /// connection drops while it is in flight it completes as `ClientError.disconnected`.
    public static func increment(_ delta: Int64) -> JSONValue { [".sv": ["increment": .int(delta)]] }

    /// The stored number plus `delta` (a double).
    public static func increment(by delta: Double) -> JSONValue { [".sv": ["increment": .double(delta)]] }
}

