// KeyValue -- JetStream's key-value buckets (ADR-8): a bucket is the stream `KV_<bucket>` on `$KV.<bucket>.>`.
//
// A key is the subject `$KV.<bucket>.<key>`; its revision is the stream sequence of its newest message. A put is
// a publish; `create` expects the key's last subject sequence to be 0 (no message yet), `update` expects the
// revision the caller read, so both are compare-and-set, decided by the stream leader: of two nodes creating
// the same key, exactly one gets a revision and the other err_code 10071. A delete is an empty message with
// `KV-Operation: DEL`, a purge `KV-Operation: PURGE` with `Nats-Rollup: sub` (removes the key's history). A key
// deleted or purged may be created again (`create` then expects the marker's revision).
//
// The bucket's `ttl` is its stream's `max_age`: a key not written for that long disappears — in 2.9 without a
// marker, so a watcher is not told. That is what makes a bucket a lease table (Cluster.md#Ownership-leases-and-fencing).

import CanopyCore

/// A key-value entry.
public struct KeyValueEntry: Sendable, Equatable {
    public enum Operation: String, Sendable { case put = "PUT", delete = "DEL", purge = "PURGE" }
    public var bucket: String
    public var key: String
    public var value: [UInt8]
    public var revision: UInt64
    public var operation: Operation
}

/// What a key-value bucket refused.
public enum KeyValueError: CanopyError, Equatable {
    /// `create` of a key that exists (its revision attached when known).
    case keyExists(key: String)
    /// `update` or `delete` at a revision that is not the key's newest.
    case wrongRevision(key: String, expected: UInt64)
    case invalidKey(String)
    case invalidBucket(String)

    public var code: String { "kv" }
    public var userMessage: String {
        switch self {
        case .keyExists(let key): "key '\(key)' exists"
        case .wrongRevision(let key, let expected): "key '\(key)' is not at revision \(expected)"
        case .invalidKey(let key): "'\(key.prefix(64))' is not a valid key"
        case .invalidBucket(let bucket): "'\(bucket.prefix(64))' is not a valid bucket name"
        }
    }
}

/// One bucket.
public struct KeyValue: Sendable {
    public let js: JetStream
    public let bucket: String
    public var streamName: String { "KV_" + bucket }
    private var prefix: String { "$KV." + bucket + "." }

    /// Creates the bucket (or binds to it if it exists with the same settings).
    /// - Parameters:
    ///   - history: revisions kept per key (1–64).
    ///   - ttl: keys not written for this long disappear (nil: never).
    ///   - replicas: 1 or 3.
    public static func create(
        _ js: JetStream, bucket: String, history: Int = 1, ttl: Duration? = nil, replicas: Int = 1,
        storage: JetStreamStreamConfig.Storage = .file
    ) throws -> KeyValue {
        try checkBucket(bucket)
        var config = JetStreamStreamConfig(name: "KV_" + bucket, subjects: ["$KV.\(bucket).>"], replicas: replicas)
        config.maxMessagesPerSubject = max(1, min(history, 64))
        config.maxAge = ttl
        config.storage = storage
        config.discard = .new
        config.allowDirect = true
        config.allowRollup = true
        config.denyDelete = true
        // The duplicate window may not exceed the age limit.
        if let ttl, ttl < config.duplicateWindow { config.duplicateWindow = ttl }
        _ = try js.createStream(config)
        return KeyValue(js: js, bucket: bucket)
    }

    /// Binds to an existing bucket.
    public static func bind(_ js: JetStream, bucket: String) throws -> KeyValue {
        try checkBucket(bucket)
        _ = try js.streamInfo("KV_" + bucket)
        return KeyValue(js: js, bucket: bucket)
    }

    private init(js: JetStream, bucket: String) {
        self.js = js
        self.bucket = bucket
    }

    // MARK: Writing

    /// Writes `value` whatever the key holds; returns the new revision.
    public func put(_ key: String, _ value: some Collection<UInt8>) throws -> UInt64 {
        try write(key, value, expected: nil, operation: .put)
    }

    /// Writes `value` only if the key does not exist (or was deleted); returns the revision.
    /// - Throws: ``KeyValueError/keyExists(key:)``.
    public func create(_ key: String, _ value: some Collection<UInt8>) throws -> UInt64 {
        do {
            return try write(key, value, expected: 0, operation: .put)
        } catch KeyValueError.wrongRevision {
            // A delete or purge marker is the key's last message: creating over it is allowed, at its revision.
            guard let last = try entry(key, includeDeleted: true), last.operation != .put else {
                throw KeyValueError.keyExists(key: key)
            }
            do {
                return try write(key, value, expected: last.revision, operation: .put)
            } catch KeyValueError.wrongRevision {
                throw KeyValueError.keyExists(key: key)
            }
        }
    }

    /// Writes `value` only if the key's newest revision is `revision`; returns the new one.
    /// - Throws: ``KeyValueError/wrongRevision(key:expected:)``.
    public func update(_ key: String, _ value: some Collection<UInt8>, revision: UInt64) throws -> UInt64 {
        try write(key, value, expected: revision, operation: .put)
    }

    /// Marks the key deleted (at `revision` only, if given); returns the marker's revision.
    @discardableResult
    public func delete(_ key: String, revision: UInt64? = nil) throws -> UInt64 {
        try write(key, [], expected: revision, operation: .delete)
    }

    /// Removes the key's history, leaving one purge marker.
    @discardableResult
    public func purge(_ key: String) throws -> UInt64 {
        try write(key, [], expected: nil, operation: .purge)
    }

    private func write(
        _ key: String, _ value: some Collection<UInt8>, expected: UInt64?, operation: KeyValueEntry.Operation
    ) throws -> UInt64 {
        try Self.checkKey(key)
        var headers = NATSHeaders()
        if operation != .put { headers.set("KV-Operation", operation.rawValue) }
        if operation == .purge { headers.set("Nats-Rollup", "sub") }
        let options = JetStreamPublishOptions(
            expectedLastSubjectSequence: expected, headers: headers.isEmpty ? nil : headers)
        do {
            return try js.publish(prefix + key, payload: value, options: options).sequence
        } catch let error as JetStreamError where error.isWrongLastSequence {
            throw KeyValueError.wrongRevision(key: key, expected: expected ?? 0)
        }
    }

    // MARK: Reading

    /// The key's newest entry; nil if it does not exist or was deleted or purged (unless `includeDeleted`).
    /// - Parameter direct: read from any replica (`DIRECT.GET`, cheaper, may miss the newest writes) instead of
    ///   the stream leader (`STREAM.MSG.GET`, which sees every acknowledged write).
    public func entry(_ key: String, includeDeleted: Bool = false, direct: Bool = false) throws -> KeyValueEntry? {
        try Self.checkKey(key)
        let subject = prefix + key
        let found =
            direct
            ? try js.directGet(stream: streamName, lastBySubject: subject)
            : try js.lastMessage(stream: streamName, subject: subject)
        guard let message = found else { return nil }
        let entry = entry(from: message.subject, sequence: message.sequence, headers: message.headers,
            payload: message.payload)
        return entry.operation == .put || includeDeleted ? entry : nil
    }

    /// The key's value (from the stream leader), nil if it does not exist.
    public func get(_ key: String) throws -> [UInt8]? { try entry(key)?.value }

    /// The stored values of the keys matching `keys` (`>`, `ns.*` …), oldest first, deleted and purged keys left
    /// out: one `STREAM.MSG.GET` (`next_by_subj`, which takes wildcards) per stored message, plus one that finds
    /// none. Meant for buckets with a history of 1 (with more, every kept revision is returned).
    public func entries(_ keys: String = ">") throws -> [KeyValueEntry] {
        var found: [KeyValueEntry] = []
        var from: UInt64 = 1
        while let message = try js.firstMessage(stream: streamName, subject: prefix + keys, from: from) {
            let entry = entry(from: message.subject, sequence: message.sequence, headers: message.headers, payload: message.payload)
            if entry.operation == .put { found.append(entry) }
            from = message.sequence + 1
        }
        return found
    }

    /// Watches keys matching `keys` (`>` all, `ns.*` …): first the newest entry of each (deleted ones included),
    /// then every change. Read the entries with ``KeyValueWatcher/next(timeout:)``.
    public func watch(_ keys: String = ">") throws -> KeyValueWatcher {
        let consumer = try JetStreamOrderedConsumer(
            js, stream: streamName, filterSubject: prefix + keys, start: .lastPerSubject)
        return KeyValueWatcher(bucket: self, consumer: consumer)
    }

    func entry(from subject: String, sequence: UInt64, headers: NATSHeaders?, payload: [UInt8]) -> KeyValueEntry {
        let operation = headers?["KV-Operation"].flatMap(KeyValueEntry.Operation.init(rawValue:)) ?? .put
        return KeyValueEntry(
            bucket: bucket, key: String(subject.dropFirst(prefix.count)), value: payload, revision: sequence,
            operation: operation)
    }

    // MARK: Names

    /// Keys: `[-/_=.a-zA-Z0-9]+`, not starting or ending with a dot (ADR-8).
    static func checkKey(_ key: String) throws(KeyValueError) {
        guard !key.isEmpty, !key.hasPrefix("."), !key.hasSuffix("."),
            key.utf8.allSatisfy({ isAlphanumeric($0) || "-/_=.".utf8.contains($0) })
        else { throw .invalidKey(key) }
    }

    static func checkBucket(_ bucket: String) throws(KeyValueError) {
        guard !bucket.isEmpty, bucket.utf8.count <= 128, bucket.utf8.allSatisfy({ isAlphanumeric($0) || $0 == 0x5F || $0 == 0x2D })
        else { throw .invalidBucket(bucket) }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }
}

/// The entries of a ``KeyValue/watch(_:)``.
public final class KeyValueWatcher: Sendable {
    public let bucket: KeyValue
    private let consumer: JetStreamOrderedConsumer

    init(bucket: KeyValue, consumer: JetStreamOrderedConsumer) {
        self.bucket = bucket
        self.consumer = consumer
    }

    /// The next entry, nil on timeout. Keys removed by the bucket's TTL are not reported (nats-server 2.9).
    public func next(timeout: Duration) -> KeyValueEntry? {
        guard let message = consumer.next(timeout: timeout) else { return nil }
        return bucket.entry(
            from: message.subject, sequence: message.streamSequence, headers: message.headers,
            payload: message.payload)
    }

    public func stop() { consumer.stop() }
}
