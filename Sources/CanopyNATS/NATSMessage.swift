// NATSMessage -- a message delivered by MSG/HMSG, the server operations the parser yields, and INFO.

import CanopyCore

/// One message delivered to a subscription.
public struct NATSMessage: Sendable, Equatable {
    public var subject: String
    /// The subscription it was delivered to.
    public var sid: UInt64
    public var replyTo: String?
    /// Present for HMSG (also when the block holds only a status line).
    public var headers: NATSHeaders?
    public var payload: [UInt8]

    public init(subject: String, sid: UInt64, replyTo: String?, headers: NATSHeaders?, payload: [UInt8]) {
        self.subject = subject
        self.sid = sid
        self.replyTo = replyTo
        self.headers = headers
        self.payload = payload
    }

    /// The status a server set on a message it made itself (503, 404, 408, 100), if any.
    public var status: Int? { headers?.status }
    public var text: String { String(decoding: payload, as: UTF8.self) }
}

/// One operation received from a server.
public enum NATSServerOperation: Sendable, Equatable {
    case info(NATSServerInfo)
    case message(NATSMessage)
    case ping
    case pong
    case ok
    case error(String)
}

/// The fields of a server's `INFO` this client uses.
public struct NATSServerInfo: Sendable, Equatable {
    public var serverID: String
    public var serverName: String
    public var version: String
    /// The largest payload (headers included) the server accepts in a PUB/HPUB.
    public var maxPayload: Int
    public var headers: Bool
    public var jetStream: Bool
    /// Other servers of the cluster that clients may use (`host:port`), announced as the cluster changes.
    public var connectURLs: [String]
    /// The server is in lame-duck mode: it will close soon, so move to another server.
    public var lameDuck: Bool
    public var authRequired: Bool
    /// The JSON as sent.
    public var raw: JSONValue

    init(json: JSONValue) throws(NATSProtocolError) {
        guard case .object = json else { throw .badInfo("not a JSON object") }
        raw = json
        serverID = json["server_id"]?.stringValue ?? ""
        serverName = json["server_name"]?.stringValue ?? serverID
        version = json["version"]?.stringValue ?? ""
        guard let payload = json["max_payload"]?.int64Value ?? Optional(1 << 20), payload > 0 else {
            throw .badInfo("max_payload is not a positive integer")
        }
        maxPayload = Int(clamping: payload)
        headers = json["headers"]?.boolValue ?? false
        jetStream = json["jetstream"]?.boolValue ?? false
        connectURLs = json["connect_urls"]?.arrayValue?.compactMap(\.stringValue) ?? []
        lameDuck = json["ldm"]?.boolValue ?? false
        authRequired = json["auth_required"]?.boolValue ?? false
    }
}
