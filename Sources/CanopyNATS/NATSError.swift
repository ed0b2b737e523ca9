// NATSError -- what can go wrong talking to a NATS server, and what JetStream refused.

import CanopyCore

/// A failure of the NATS client: the connection, the protocol, or a request.
public enum NATSError: CanopyError, Equatable {
    /// No server of the list accepted a connection (the last reason attached).
    case cannotConnect(String)
    /// The connection is down and did not come back within the wait.
    case notConnected
    /// The client was closed.
    case closed
    /// The server sent something this client does not accept; the connection was dropped.
    case protocolViolation(NATSProtocolError)
    /// The server said `-ERR`.
    case server(String)
    /// A request got no reply in time.
    case timeout(subject: String)
    /// Nobody subscribes to the subject of a request (status 503).
    case noResponders(subject: String)
    /// A publish (headers and payload) is larger than the server's `max_payload`.
    case payloadTooLarge(size: Int, maximum: Int)
    /// A subject, reply subject, queue group or header is malformed; nothing was sent.
    case invalidArgument(String)
    /// A subscription's queue of undelivered messages overflowed; messages were dropped.
    case slowConsumer(subject: String)

    public var code: String { "nats" }
    public var userMessage: String {
        switch self {
        case .cannotConnect(let reason): "cannot connect to any NATS server: \(reason)"
        case .notConnected: "not connected to a NATS server"
        case .closed: "the NATS connection is closed"
        case .protocolViolation(let error): "NATS protocol violation: \(error.userMessage)"
        case .server(let message): "NATS server error: \(message)"
        case .timeout(let subject): "no reply on \(subject) in time"
        case .noResponders(let subject): "no responders on \(subject)"
        case .payloadTooLarge(let size, let maximum): "message of \(size) bytes exceeds max_payload \(maximum)"
        case .invalidArgument(let reason): reason
        case .slowConsumer(let subject): "slow consumer on \(subject): messages were dropped"
        }
    }
}

/// Input from a server that breaks the protocol (`NATSParser`): the connection carrying it is dropped.
public enum NATSProtocolError: CanopyError, Equatable {
    /// A control line longer than the limit, or not ended by CRLF within it.
    case lineTooLong(limit: Int)
    /// A line ended by a bare LF, or a payload not followed by CRLF.
    case badFraming(String)
    /// An operation this client does not know (`FOO`), or one a server never sends.
    case unknownOperation(String)
    /// An operation with missing, extra or malformed arguments.
    case badArguments(String)
    /// A message larger than the payload limit.
    case payloadTooLarge(size: Int, limit: Int)
    /// A header block that is not `NATS/1.0` followed by `Name: value` lines.
    case badHeaders(String)
    /// An `INFO` whose argument is not a JSON object.
    case badInfo(String)

    public var code: String { "nats_protocol" }
    public var userMessage: String {
        switch self {
        case .lineTooLong(let limit): "control line longer than \(limit) bytes"
        case .badFraming(let what): "bad framing: \(what)"
        case .unknownOperation(let op): "unknown operation '\(op)'"
        case .badArguments(let what): "bad arguments: \(what)"
        case .payloadTooLarge(let size, let limit): "payload of \(size) bytes exceeds the limit of \(limit)"
        case .badHeaders(let what): "bad headers: \(what)"
        case .badInfo(let what): "bad INFO: \(what)"
        }
    }
}

/// A JetStream API call or publish the server refused: `{"error": {"code": 400, "err_code": 10071, ...}}`.
public struct JetStreamError: CanopyError, Equatable {
    /// The HTTP-like status (400, 404, 503 …).
    public var status: Int
    /// JetStream's own error code (10071 wrong last sequence, 10059 stream not found, 10058 name in use …).
    public var errorCode: Int
    public var errorDescription: String

    public init(status: Int, errorCode: Int, description: String) {
        self.status = status
        self.errorCode = errorCode
        self.errorDescription = description
    }

    /// The publish named a stale `Nats-Expected-Last-Sequence` / `-Last-Subject-Sequence` (the fence held).
    public static let wrongLastSequence = 10071
    /// The stream does not exist.
    public static let streamNotFound = 10059
    /// A stream of that name exists with another configuration.
    public static let streamNameInUse = 10058
    /// The message does not exist.
    public static let noMessageFound = 10037
    /// A JetStream cluster with no elected meta leader (yet).
    public static let clusterNotAvailable = 10008

    public var isWrongLastSequence: Bool { errorCode == Self.wrongLastSequence }

    public var code: String { "jetstream" }
    public var userMessage: String { "JetStream refused (\(status), err_code \(errorCode)): \(errorDescription)" }
}
