// ClusterNode+Snapshots -- snapshots in the `CANOPY_SNAP` stream, the log trimmed below them, and loading a
// namespace from its newest good snapshot and the log after it (Cluster.md#Snapshots). Blocks on NATS: runs on
// the claim queue and the snapshot queue, never on the event loop.

import CanopyCore
import CanopyNATS

/// A namespace's state as read from NATS: a snapshot (or nothing) and the log messages applied after it.
struct ReplayedLog: Sendable {
    var tree: Node = .empty
    var rules: String?
    /// The last log sequence applied (the snapshot's, or 0 before any message).
    var applied: UInt64 = 0
    /// The snapshot it started from: verified by this node (read back whole, or written by it); nil: the log
    /// from its first message.
    var snapshot: SnapshotManifest?
    /// Log messages and their bytes applied since that snapshot (what the next snapshot would cover anew).
    var messages = 0
    var bytes = 0

    /// Applies one log message (its sequence, payload and decoded content) on top of the state.
    mutating func apply(_ batch: ClusterBatch, sequence: UInt64, bytes count: Int) {
        switch batch {
        case .operations(let operations): tree = ClusterBatch.apply(operations, to: tree)
        case .rules(let source): rules = source
        case .takeover: break
        }
        applied = sequence
        messages += 1
        bytes += count
    }
}

/// A log message does not follow the one before it: the log was trimmed below the point a reader started from.
struct LogGapError: Error, CustomStringConvertible {
    let description: String
}

extension ClusterNode {
    static let snapshotStream = "CANOPY_SNAP"

    /// The subjects of a namespace's snapshot chunks and manifests in `CANOPY_SNAP`.
    static func snapshotSubjects(of namespace: String) -> (chunks: String, manifest: String) {
        ("canopy.snap.\(namespace).chunks", "canopy.snap.\(namespace).manifest")
    }

    /// The configuration of `CANOPY_SNAP` (created with the log streams).
    static func snapshotStreamConfig(replicas: Int) -> JetStreamStreamConfig {
        var config = JetStreamStreamConfig(name: snapshotStream, subjects: ["canopy.snap.*.*"], replicas: replicas)
        config.duplicateWindow = .seconds(120)
        return config
    }

    // MARK: - Loading

    /// Where a namespace's state starts: the newest snapshot that is whole and whose hash holds; a snapshot that
    /// is not is skipped (logged) for the one before it; with none, the log from its start.
    func startingPoint(_ namespace: String) throws -> ReplayedLog {
        for manifest in try manifests(of: namespace) {
            do {
                let snapshot = try readSnapshot(manifest, namespace: namespace)
                logger.notice(
                    "cluster.snapshot_loaded",
                    ["ns": namespace, "log_seq": "\(manifest.sequence)", "bytes": "\(manifest.bytes)"])
                return ReplayedLog(
                    tree: snapshot.tree, rules: snapshot.rules, applied: snapshot.sequence, snapshot: manifest)
            } catch {
                logger.warning(
                    "cluster.snapshot_skipped",
                    ["ns": namespace, "log_seq": "\(manifest.sequence)", "reason": "\(error)"])
            }
        }
        return ReplayedLog()
    }

    /// Every manifest of `namespace` still in the stream, newest first (at most a few: older ones are purged).
    func manifests(of namespace: String) throws -> [SnapshotManifest] {
        let subject = Self.snapshotSubjects(of: namespace).manifest
        var found: [SnapshotManifest] = []
        var from: UInt64 = 1
        while let message = try js.firstMessage(stream: Self.snapshotStream, subject: subject, from: from) {
            from = message.sequence + 1
            do {
                found.append(try SnapshotManifest.decode(message.payload, streamSequence: message.sequence))
            } catch {
                logger.warning("cluster.snapshot_skipped", ["ns": namespace, "reason": "\(error)"])
            }
        }
        return found.reversed()
    }

    /// The snapshot a manifest describes, read from its chunks and checked.
    func readSnapshot(_ manifest: SnapshotManifest, namespace: String) throws -> ClusterSnapshot {
        // None of its chunks left (purged, or never written): said at once, not after a consumer's wait.
        let chunks = Self.snapshotSubjects(of: namespace).chunks
        guard let first = try js.firstMessage(stream: Self.snapshotStream, subject: chunks, from: manifest.first),
            first.sequence <= manifest.last
        else { throw ClusterSnapshotError("0 of its \(manifest.chunks) chunks are in the stream") }
        let consumer = try JetStreamOrderedConsumer(
            js, stream: Self.snapshotStream, filterSubject: Self.snapshotSubjects(of: namespace).chunks,
            start: .sequence(manifest.first), heartbeat: .milliseconds(500))
        defer { consumer.stop() }
        var messages: [(headers: NATSHeaderLookup, payload: [UInt8])] = []
        while let message = consumer.next(timeout: .seconds(5)) {
            guard message.streamSequence >= manifest.first else { continue }
            if message.streamSequence > manifest.last { break }
            let headers = message.headers
            messages.append(({ headers?[$0] }, message.payload))
            // The last chunk, or nothing more in the stream (chunks were purged or never written).
            if message.streamSequence == manifest.last || message.pending == 0 { break }
        }
        return try ClusterSnapshot.assemble(manifest, namespace: namespace, messages: messages)
    }

    /// Applies the log messages of `subject` with sequence in (state.applied, last] to `state`, checking that
    /// each names the one before it as its fence (`Nats-Expected-Last-Subject-Sequence`, stored with every
    /// message): a message that names another was preceded by messages trimmed away.
    /// - Throws: `LogGapError` on such a gap, `ClusterError` when the log cannot be read.
    func replay(stream: String, subject: String, through last: UInt64, into state: inout ReplayedLog) throws {
        let consumer = try JetStreamOrderedConsumer(
            js, stream: stream, filterSubject: subject, start: .sequence(state.applied + 1),
            heartbeat: .milliseconds(500))
        defer { consumer.stop() }
        var parts = BatchAssembler()
        defer {
            parts.dropPending()
            if parts.droppedParts > 0 {
                logger.notice("cluster.parts_dropped", ["subject": subject, "parts": "\(parts.droppedParts)"])
            }
        }
        while state.applied < last {
            guard let message = consumer.next(timeout: .seconds(10)) else {
                throw ClusterError("reading \(subject) stalled at sequence \(state.applied) of \(last)")
            }
            guard message.streamSequence > state.applied else { continue }
            if message.streamSequence > last { break }
            let sequence = message.streamSequence
            try Self.checkChain(message.headers, sequence: sequence, after: state.applied, subject: subject)
            state.apply(
                try parts.take(headers: message.headers, payload: message.payload), sequence: sequence,
                bytes: message.payload.count)
        }
    }

    /// A log message at `sequence` must name `previous` as the subject's last sequence before it.
    static func checkChain(_ headers: NATSHeaders?, sequence: UInt64, after previous: UInt64, subject: String)
        throws(LogGapError)
    {
        guard let named = headers?["Nats-Expected-Last-Subject-Sequence"].flatMap({ UInt64($0) }) else { return }
        guard named == previous else {
            throw LogGapError(
                description: "the log \(subject) continues at sequence \(sequence), which follows \(named), not "
                    + "\(previous): the messages between were trimmed and no snapshot covering them could be read")
        }
    }

    /// `startingPoint` then `replay` through `last`; a gap (the log trimmed meanwhile below where it started)
    /// starts once more from the then newest snapshot.
    func load(_ namespace: String, stream: String, subject: String, through last: UInt64) throws -> ReplayedLog {
        var state = try startingPoint(namespace)
        do {
            if last > state.applied { try replay(stream: stream, subject: subject, through: last, into: &state) }
        } catch let gap as LogGapError {
            logger.warning("cluster.log_gap", ["ns": namespace, "reason": gap.description])
            state = try startingPoint(namespace)
            if last > state.applied { try replay(stream: stream, subject: subject, through: last, into: &state) }
        }
        return state
    }

    // MARK: - Writing

    /// Publishes `snapshot` (chunks, then its manifest); then, as it is whole, purges the snapshots before
    /// `kept` and trims the namespace's log below `kept` (the previous snapshot, kept as a fallback with the
    /// log after it). Returns the new manifest, nil when it was not written. Runs on `snapshotQueue`.
    func writeSnapshot(_ snapshot: ClusterSnapshot, keeping kept: SnapshotManifest?, for log: NamespaceLog)
        -> SnapshotManifest?
    {
        let namespace = snapshot.namespace
        guard !log.isDeposed, leaseIsValid else { return nil }
        let started = monotonicNanoseconds()
        let subjects = Self.snapshotSubjects(of: namespace)
        let id = "\(name).\(log.epoch).\(snapshot.sequence)"
        do {
            let body = snapshot.encode()
            let sha256 = Hash.sha256Hex(body)
            let encoded = monotonicNanoseconds()
            let chunks = ClusterSnapshot.split(body)
            var first: UInt64 = 0
            var lastChunk: UInt64 = 0
            for (index, chunk) in chunks.enumerated() {
                guard !log.isDeposed else { return nil }
                var headers = NATSHeaders()
                headers.set("Canopy-Snapshot", id)
                headers.set("Canopy-Chunk", "\(index)/\(chunks.count)")
                let ack = try publishRetrying(
                    subjects.chunks, chunk,
                    JetStreamPublishOptions(
                        messageID: "\(id).\(index)", expectedStream: Self.snapshotStream, headers: headers))
                if index == 0 { first = ack.sequence }
                lastChunk = ack.sequence
            }
            var manifest = SnapshotManifest(
                id: id, sequence: snapshot.sequence, first: first, last: lastChunk, chunks: chunks.count,
                bytes: body.count, sha256: sha256)
            var headers = NATSHeaders()
            headers.set("Canopy-Snapshot-Sequence", String(snapshot.sequence))
            manifest.streamSequence = try publishRetrying(
                subjects.manifest, manifest.encode(),
                JetStreamPublishOptions(
                    messageID: "\(id).manifest", expectedStream: Self.snapshotStream, headers: headers)
            ).sequence
            let published = monotonicNanoseconds()
            logger.notice(
                "cluster.snapshot",
                [
                    "ns": namespace, "log_seq": "\(snapshot.sequence)", "bytes": "\(body.count)",
                    "chunks": "\(chunks.count)", "encode_ms": "\((encoded - started) / 1_000_000)",
                    "publish_ms": "\((published - encoded) / 1_000_000)",
                ])
            if let kept, !log.isDeposed { try trim(namespace, below: kept, log: log) }
            return manifest
        } catch {
            logger.warning(
                "cluster.snapshot_failed", ["ns": namespace, "log_seq": "\(snapshot.sequence)", "error": "\(error)"])
            return nil
        }
    }

    /// Removes the snapshots before `kept` and the log messages up to `kept`'s sequence (a node starting from
    /// `kept` reads the log after it; one starting from the newer snapshot reads less).
    private func trim(_ namespace: String, below kept: SnapshotManifest, log: NamespaceLog) throws {
        let subjects = Self.snapshotSubjects(of: namespace)
        let chunks = try js.purge(stream: Self.snapshotStream, filter: subjects.chunks, below: kept.first)
        let manifests = try js.purge(stream: Self.snapshotStream, filter: subjects.manifest, below: kept.streamSequence)
        let messages = try js.purge(stream: log.stream, filter: log.subject, below: kept.sequence + 1)
        logger.notice(
            "cluster.log_trimmed",
            [
                "ns": namespace, "below_seq": "\(kept.sequence + 1)", "log_messages": "\(messages)",
                "snapshot_messages": "\(chunks + manifests)",
            ])
    }

    /// A JetStream publish retried while NATS does not answer (a leader election), for up to 12 s; a refusal
    /// is thrown at once.
    private func publishRetrying(
        _ subject: String, _ payload: some Collection<UInt8>, _ options: JetStreamPublishOptions
    ) throws -> JetStreamPubAck
    {
        let deadline = monotonicNanoseconds() + 12_000_000_000
        while true {
            do {
                return try js.publish(subject, payload: payload, options: options)
            } catch let error as JetStreamError where error.status >= 400 && error.status < 500 {
                throw error
            } catch {
                guard monotonicNanoseconds() < deadline, leaseIsValid else { throw error }
                usleep(100_000)
            }
        }
    }
}

#if canImport(Glibc)
    import Glibc
#endif
