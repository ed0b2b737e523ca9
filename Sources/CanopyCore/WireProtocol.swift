// WireProtocol -- the names Firebase wire protocol v5 gives its keys, message types, actions and statuses
// (Protocol.md#Wire-protocol), shared by the server's sessions and the client SDK so that neither side spells a
// one-letter key by hand.
//
// Envelopes, with these names:
//   control   {t: MessageType.control, d: {t: <Control>, d: <payload>}}      handshake payload: Handshake keys
//   request   {t: MessageType.data, d: {r: <n>, a: <Action>, b: <body>}}
//   response  {t: MessageType.data, d: {r: <n>, b: {s: <Status>, d: <payload>}}}
//   push      {t: MessageType.data, d: {a: <Push>, b: <body>}}
// Bodies use `p` (path), `d` (data), `q` (query object), `t` (tag) and `h` (hash). One letter means different
// things at different levels (`t` is the envelope type, the control type and a listen's tag; `s` is a status,
// the stats action and the handshake's session), so each level has its own name for it.

/// The vocabulary of Firebase wire protocol v5.
public enum Wire {
    /// The protocol version the handshake announces and `/.ws?v=` asks for.
    public static let version = "5"
    /// The frame every client sends after 45 s without traffic: no message at all.
    public static let keepAliveFrame = "0"

    /// Keys of envelopes, requests, responses and pushes.
    public enum Key {
        /// Envelope: the message type (`MessageType`); control message: its `Control` type.
        public static let type = "t"
        /// Envelope: the message; control message: its payload; body: the data written or pushed; response: its
        /// payload.
        public static let data = "d"
        /// Request or push: its action.
        public static let action = "a"
        /// Request, response or push: its body.
        public static let body = "b"
        /// Request or response: the request number.
        public static let request = "r"
        /// Response body, `ac` push: the status.
        public static let status = "s"
        /// Body: the path (absolute, `/a/b`).
        public static let path = "p"
        /// Body: the query object (`QuerySpec.wireObject()`); in a `c` push, a one-element array of it.
        public static let query = "q"
        /// Body: a listen's tag (an integer).
        public static let tag = "t"
        /// Body: a data hash (a listen's cached data, a transaction's precondition).
        public static let hash = "h"
        /// `auth`/`gauth` body: the credential.
        public static let credential = "cred"
        /// `auth`/`gauth` body of an admin credential: act as this `auth` object.
        public static let authOverride = "authvar"
        /// `auth`/`gauth` body of an admin credential: act as nobody.
        public static let noAuth = "noauth"
        /// Listen response payload: warnings (`Warning`).
        public static let warnings = "w"
    }

    /// Envelope types.
    public enum MessageType {
        public static let control = "c"
        public static let data = "d"
    }

    /// Keys of the handshake (`Control.handshake`) payload.
    public enum Handshake {
        /// The server's time in ms (an integer).
        public static let timestamp = "ts"
        /// The protocol version (`Wire.version`).
        public static let version = "v"
        /// The host the client reconnects to.
        public static let host = "h"
        /// The session id (long polling upgrades name it in `/.ws?s=`).
        public static let session = "s"
    }

    /// Control message types.
    public enum Control {
        public static let handshake = "h"
        public static let ping = "p"
        public static let pong = "o"
        public static let reset = "r"
        public static let shutdown = "s"
        public static let error = "e"
        /// Long polling to WebSocket: the switch acknowledgement.
        public static let switchAck = "a"
        /// Long polling to WebSocket: end of transmission on the old transport.
        public static let endTransmission = "n"
    }

    /// Request actions (client to server).
    public enum Action {
        public static let stats = "s"
        public static let auth = "auth"
        public static let adminAuth = "gauth"
        public static let unauth = "unauth"
        public static let appCheck = "appcheck"
        /// The JS SDK's spelling of `unappcheck`.
        public static let appCheckRemovedJS = "unappeck"
        public static let appCheckRemoved = "unappcheck"
        public static let listen = "q"
        /// Old iOS clients' listen.
        public static let legacyListen = "l"
        public static let unlisten = "n"
        /// Old iOS clients' unlisten.
        public static let legacyUnlisten = "u"
        public static let get = "g"
        public static let put = "p"
        public static let merge = "m"
        public static let onDisconnectPut = "o"
        public static let onDisconnectMerge = "om"
        public static let onDisconnectCancel = "oc"
    }

    /// Push actions (server to client).
    public enum Push {
        /// The node at `p` is now `d`.
        public static let data = "d"
        /// An update at `p`: each relative path in `d` is set.
        public static let merge = "m"
        /// The listen at `p` (and `q`) was revoked.
        public static let listenRevoked = "c"
        /// The credential expired or was revoked.
        public static let authRevoked = "ac"
    }

    /// Response statuses.
    public enum Status {
        public static let ok = "ok"
        public static let permissionDenied = "permission_denied"
        /// A transaction's hash did not match: the client reruns it.
        public static let dataStale = "datastale"
        public static let invalidToken = "invalid_token"
        public static let expiredToken = "expired_token"
        public static let failure = "failure"
        public static let unavailable = "unavailable"
        public static let tooBig = "too_big"
    }

    /// Warnings a listen's `ok` may carry under `Key.warnings`.
    public enum Warning {
        /// The query orders by a child or value that `.indexOn` does not declare.
        public static let noIndex = "no_index"
    }

    /// A control message: `{"t":"c","d":{"t":<type>,"d":<payload>}}`.
    public static func control(_ type: String, _ payload: JSONValue = [:]) -> JSONValue {
        [Key.type: .string(MessageType.control), Key.data: [Key.type: .string(type), Key.data: payload]]
    }

    /// A request: `{"t":"d","d":{"r":<n>,"a":<action>,"b":<body>}}`.
    public static func request(_ number: Int64, _ action: String, _ body: JSONValue) -> JSONValue {
        [
            Key.type: .string(MessageType.data),
            Key.data: [Key.request: .int(number), Key.action: .string(action), Key.body: body],
        ]
    }

    /// A response: `{"t":"d","d":{"r":<n>,"b":{"s":<status>,"d":<payload>}}}`.
    public static func response(_ number: Int64, _ status: String, _ payload: JSONValue) -> JSONValue {
        [
            Key.type: .string(MessageType.data),
            Key.data: [Key.request: .int(number), Key.body: [Key.status: .string(status), Key.data: payload]],
        ]
    }

    /// A push: `{"t":"d","d":{"a":<action>,"b":<body>}}`.
    public static func push(_ action: String, _ body: JSONValue) -> JSONValue {
        [Key.type: .string(MessageType.data), Key.data: [Key.action: .string(action), Key.body: body]]
    }

    /// The serialized opening of a push up to its path's value, `{"t":"d","d":{"a":<action>,"b":{"p":`, for
    /// senders that write the rest straight into bytes.
    public static func pushOpening(_ action: String) -> [UInt8] {
        let envelope = #"{"\#(Key.type)":"\#(MessageType.data)","\#(Key.data)":"#
        let push = #"{"\#(Key.action)":"\#(action)","\#(Key.body)":{"\#(Key.path)":"#
        return Array((envelope + push).utf8)
    }

    /// The serialized member name `,"<key>":`, for senders that write members straight into bytes.
    public static func memberSeparator(_ key: String) -> [UInt8] {
        Array(#","\#(key)":"#.utf8)
    }
}
