// JetStream -- the JetStream API over a NATS connection: streams, publishes with expectations, message gets.
//
// Every call is a request on `$JS.API.<call>` with a JSON body and a JSON answer (docs.nats.io, "JetStream wire
// API reference"; ADR-1, ADR-31); an answer with an `error` member throws ``JetStreamError``. A publish is a
// request to the stream's subject whose reply is the PubAck `{"stream", "seq", "duplicate"}`, or the error.
// Calls block their caller (see NATSConnection.swift): never call them on an event loop.

import CanopyCore

/// How a stream stores and keeps its messages (`StreamConfig` in the API; only what Canopy uses).
public struct JetStreamStreamConfig: Sendable, Equatable {
    public enum Storage: String, Sendable { case file, memory }
    public enum Discard: String, Sendable { case old, new }

    public var name: String
    public var subjects: [String]
    /// 1 or 3 (or 5): each message is stored on this many servers, acknowledged once a majority has it.
    public var replicas: Int = 1
    public var storage: Storage = .file
    public var discard: Discard = .old
    /// Messages kept per subject (-1: unlimited).
    public var maxMessagesPerSubject: Int = -1
    /// Messages kept in all (-1: unlimited).
    public var maxMessages: Int = -1
    /// Age after which messages are removed (nil: never).
    public var maxAge: Duration?
    /// The window in which a repeated `Nats-Msg-Id` is recognised as a duplicate.
    public var duplicateWindow: Duration = .seconds(120)
    /// Let any replica answer `DIRECT.GET` (reads without the leader).
    public var allowDirect: Bool = false
    /// Accept `Nats-Rollup` headers (a message that replaces its subject's or the stream's earlier ones).
    public var allowRollup: Bool = false
    public var denyDelete: Bool = false

    public init(name: String, subjects: [String], replicas: Int = 1) {
        self.name = name
        self.subjects = subjects
        self.replicas = replicas
    }

    var json: JSONValue {
        var members: [JSONMember] = [
            JSONMember("name", .string(name)), JSONMember("subjects", .array(subjects.map { .string($0) })),
            JSONMember("retention", "limits"), JSONMember("max_consumers", -1),
            JSONMember("max_msgs", .int(Int64(maxMessages))), JSONMember("max_bytes", -1),
            JSONMember("max_msgs_per_subject", .int(Int64(maxMessagesPerSubject))),
            JSONMember("max_msg_size", -1), JSONMember("discard", .string(discard.rawValue)),
            JSONMember("storage", .string(storage.rawValue)), JSONMember("num_replicas", .int(Int64(replicas))),
            JSONMember("duplicate_window", .int(duplicateWindow.nanoseconds)),
            JSONMember("allow_direct", .bool(allowDirect)), JSONMember("allow_rollup_hdrs", .bool(allowRollup)),
            JSONMember("deny_delete", .bool(denyDelete)), JSONMember("deny_purge", false),
        ]
        members.append(JSONMember("max_age", .int(maxAge?.nanoseconds ?? 0)))
        return .object(members)
    }
}

/// A stream's state as `STREAM.INFO` reports it.
public struct JetStreamStreamInfo: Sendable {
    public var name: String
    public var replicas: Int
    public var messages: UInt64
    public var firstSequence: UInt64
    public var lastSequence: UInt64
    /// The server leading the stream's RAFT group, and its followers.
    public var leader: String?
    public var followers: [String]
    public var raw: JSONValue

    init(_ json: JSONValue) {
        raw = json
        name = json["config"]?["name"]?.stringValue ?? ""
        replicas = Int(json["config"]?["num_replicas"]?.int64Value ?? 1)
        messages = json["state"]?["messages"]?.uint64 ?? 0
        firstSequence = json["state"]?["first_seq"]?.uint64 ?? 0
        lastSequence = json["state"]?["last_seq"]?.uint64 ?? 0
        leader = json["cluster"]?["leader"]?.stringValue
        followers = json["cluster"]?["replicas"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
    }
}

/// The acknowledgement of a stored publish.
public struct JetStreamPubAck: Sendable, Equatable {
    public var stream: String
    public var sequence: UInt64
    /// The `Nats-Msg-Id` was seen within the duplicate window: nothing new was stored; `sequence` is the first's.
    public var duplicate: Bool
}

/// What a publish expects of the stream; a publish whose expectation fails is refused (err_code 10071) and
/// changes nothing.
public struct JetStreamPublishOptions: Sendable, Equatable {
    /// `Nats-Msg-Id`: a retry with the same id inside the duplicate window is stored once.
    public var messageID: String?
    /// `Nats-Expected-Last-Sequence`: the stream's last sequence must be this.
    public var expectedLastSequence: UInt64?
    /// `Nats-Expected-Last-Subject-Sequence`: the last message on this subject must have this sequence (0: none).
    public var expectedLastSubjectSequence: UInt64?
    /// `Nats-Expected-Stream`: the subject must belong to this stream.
    public var expectedStream: String?
    public var headers: NATSHeaders?

    public init(
        messageID: String? = nil, expectedLastSequence: UInt64? = nil, expectedLastSubjectSequence: UInt64? = nil,
        expectedStream: String? = nil, headers: NATSHeaders? = nil
    ) {
        self.messageID = messageID
        self.expectedLastSequence = expectedLastSequence
        self.expectedLastSubjectSequence = expectedLastSubjectSequence
        self.expectedStream = expectedStream
        self.headers = headers
    }
}

/// A message as stored in a stream.
public struct JetStreamStoredMessage: Sendable {
    public var subject: String
    public var sequence: UInt64
    public var headers: NATSHeaders?
    public var payload: [UInt8]
}

/// The JetStream API of one connection.
public struct JetStream: Sendable {
    public let connection: NATSConnection
    public var apiPrefix = "$JS.API"
    public var timeout: Duration

    public init(_ connection: NATSConnection, timeout: Duration? = nil) {
        self.connection = connection
        self.timeout = timeout ?? connection.options.requestTimeout
    }

    // MARK: Streams

    /// Creates a stream, or returns the existing one if its configuration is the same.
    public func createStream(_ config: JetStreamStreamConfig) throws -> JetStreamStreamInfo {
        try NATSEncoder.checkToken(config.name, "stream name")
        return JetStreamStreamInfo(try call("STREAM.CREATE.\(config.name)", config.json))
    }

    public func updateStream(_ config: JetStreamStreamConfig) throws -> JetStreamStreamInfo {
        JetStreamStreamInfo(try call("STREAM.UPDATE.\(config.name)", config.json))
    }

    public func streamInfo(_ name: String) throws -> JetStreamStreamInfo {
        JetStreamStreamInfo(try call("STREAM.INFO.\(name)", nil))
    }

    public func deleteStream(_ name: String) throws {
        _ = try call("STREAM.DELETE.\(name)", nil)
    }

    /// `$JS.API.INFO`: the account's JetStream usage; fails until the cluster has a meta leader.
    public func accountInfo() throws -> JSONValue { try call("INFO", nil) }

    // MARK: Publishing

    /// Publishes to a stream's subject and waits for the PubAck.
    /// - Throws: ``JetStreamError`` when refused (``JetStreamError/wrongLastSequence`` for a failed
    ///   expectation), ``NATSError/noResponders(subject:)`` when no stream has the subject, or a timeout.
    public func publish(
        _ subject: String, payload: some Collection<UInt8>, options: JetStreamPublishOptions = .init()
    ) throws -> JetStreamPubAck {
        var headers = options.headers ?? NATSHeaders()
        if let id = options.messageID { headers.set("Nats-Msg-Id", id) }
        if let sequence = options.expectedLastSequence { headers.set("Nats-Expected-Last-Sequence", String(sequence)) }
        if let sequence = options.expectedLastSubjectSequence {
            headers.set("Nats-Expected-Last-Subject-Sequence", String(sequence))
        }
        if let stream = options.expectedStream { headers.set("Nats-Expected-Stream", stream) }
        let reply = try connection.request(
            subject, payload: payload, headers: headers.isEmpty ? nil : headers, timeout: timeout)
        let json = try Self.decode(reply)
        guard let stream = json["stream"]?.stringValue, let sequence = json["seq"]?.uint64 else {
            throw NATSError.invalidArgument("a PubAck without stream and seq: \(reply.text.prefix(200))")
        }
        return JetStreamPubAck(stream: stream, sequence: sequence, duplicate: json["duplicate"]?.boolValue ?? false)
    }

    // MARK: Purging

    /// `STREAM.PURGE`: removes the messages on `filter` (every subject when nil) below stream sequence `sequence`,
    /// or all but the newest `keep` of them, or all of them when both are nil; returns how many were removed.
    /// nats-server 2.9 refuses `sequence` and `keep` together (400, `err_code` 10003 "bad request", nothing
    /// removed; checked by JetStreamPurgeTests): pass one.
    @discardableResult
    public func purge(stream: String, filter: String? = nil, below sequence: UInt64? = nil, keep: UInt64? = nil)
        throws -> UInt64
    {
        var members: [JSONMember] = []
        if let filter { members.append(JSONMember("filter", .string(filter))) }
        if let sequence { members.append(JSONMember("seq", .int(Int64(sequence)))) }
        if let keep { members.append(JSONMember("keep", .int(Int64(keep)))) }
        let json = try call("STREAM.PURGE.\(stream)", members.isEmpty ? nil : .object(members))
        return json["purged"]?.uint64 ?? 0
    }

    /// `STREAM.MSG.DELETE`: removes the message at `sequence` (its data left on disk; the stream forgets it).
    public func deleteMessage(stream: String, sequence: UInt64) throws {
        _ = try call("STREAM.MSG.DELETE.\(stream)", ["seq": .int(Int64(sequence)), "no_erase": true])
    }

    // MARK: Reading

    /// `STREAM.MSG.GET` (answered by the stream leader): the message at `sequence`, nil if there is none.
    public func message(stream: String, sequence: UInt64) throws -> JetStreamStoredMessage? {
        try storedMessage(stream: stream, request: ["seq": .int(Int64(sequence))])
    }

    /// `STREAM.MSG.GET` of the newest message on `subject`, nil if there is none.
    public func lastMessage(stream: String, subject: String) throws -> JetStreamStoredMessage? {
        try storedMessage(stream: stream, request: ["last_by_subj": .string(subject)])
    }

    /// `STREAM.MSG.GET` with `next_by_subj`: the first message on `subject` at or after `sequence`, nil if none.
    public func firstMessage(stream: String, subject: String, from sequence: UInt64 = 1) throws
        -> JetStreamStoredMessage?
    {
        try storedMessage(stream: stream, request: ["seq": .int(Int64(sequence)), "next_by_subj": .string(subject)])
    }

    private func storedMessage(stream: String, request: JSONValue) throws -> JetStreamStoredMessage? {
        let json: JSONValue
        do {
            json = try call("STREAM.MSG.GET.\(stream)", request)
        } catch let error as JetStreamError where error.errorCode == JetStreamError.noMessageFound {
            return nil
        }
        guard let message = json["message"], let subject = message["subject"]?.stringValue,
            let sequence = message["seq"]?.uint64
        else { throw NATSError.invalidArgument("a message get answer without subject and seq") }
        let payload = try message["data"]?.stringValue.map(Self.base64) ?? []
        var headers: NATSHeaders?
        if let block = try message["hdrs"]?.stringValue.map(Self.base64), !block.isEmpty {
            headers = try NATSHeaders.parse(block[...])
        }
        return JetStreamStoredMessage(subject: subject, sequence: sequence, headers: headers, payload: payload)
    }

    /// `DIRECT.GET` (answered by any replica; the stream needs `allowDirect`): the message at `sequence`, or the
    /// newest on `lastBySubject`; nil if there is none. A replica may lag the leader by a few messages.
    public func directGet(stream: String, sequence: UInt64? = nil, lastBySubject: String? = nil) throws
        -> JetStreamStoredMessage?
    {
        var members: [JSONMember] = []
        if let sequence { members.append(JSONMember("seq", .int(Int64(sequence)))) }
        if let lastBySubject { members.append(JSONMember("last_by_subj", .string(lastBySubject))) }
        var body: [UInt8] = []
        JSONValue.object(members).write(into: &body)
        let reply = try connection.request("\(apiPrefix).DIRECT.GET.\(stream)", payload: body, timeout: timeout)
        if reply.status == 404 { return nil }
        if let status = reply.status {
            throw JetStreamError(status: status, errorCode: 0, description: reply.headers?.statusDescription ?? "")
        }
        guard let headers = reply.headers, let subject = headers["Nats-Subject"],
            let sequence = headers["Nats-Sequence"].flatMap({ UInt64($0) })
        else { throw NATSError.invalidArgument("a direct get answer without Nats-Subject and Nats-Sequence") }
        return JetStreamStoredMessage(subject: subject, sequence: sequence, headers: headers, payload: reply.payload)
    }

    // MARK: Calls

    /// One API call: `$JS.API.<suffix>` with `body`; the answer's JSON, or its `error` thrown.
    /// - Parameter timeout: how long to wait for the answer; nil means ``timeout``.
    public func call(_ suffix: String, _ body: JSONValue?, timeout: Duration? = nil) throws -> JSONValue {
        var bytes: [UInt8] = []
        body?.write(into: &bytes)
        let reply = try connection.request("\(apiPrefix).\(suffix)", payload: bytes, timeout: timeout ?? self.timeout)
        return try Self.decode(reply)
    }

    static func decode(_ reply: NATSMessage) throws -> JSONValue {
        if reply.status == 503 { throw NATSError.noResponders(subject: reply.subject) }
        let json: JSONValue
        do {
            json = try JSONValue.parse(reply.payload, options: JSONParseOptions(maxDepth: 64))
        } catch {
            throw NATSError.invalidArgument("a JetStream answer that is not JSON: \(error.userMessage)")
        }
        if let error = json["error"] {
            throw JetStreamError(
                status: Int(error["code"]?.int64Value ?? 0), errorCode: Int(error["err_code"]?.int64Value ?? 0),
                description: error["description"]?.stringValue ?? "")
        }
        return json
    }

    static func base64(_ text: String) throws -> [UInt8] {
        guard let bytes = Base64.decode(text, url: false) else {
            throw NATSError.invalidArgument("a JetStream answer with bad base64")
        }
        return bytes
    }
}

extension JSONValue {
    var uint64: UInt64? { int64Value.flatMap { $0 >= 0 ? UInt64($0) : nil } }
}

extension Duration {
    /// Whole nanoseconds, as the JetStream API writes durations.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
