// ClusterSnapshot -- a namespace's tree and rules at one log sequence, as chunks and a manifest
// (Cluster.md#Snapshots). Pure: encoding, splitting and checking; NATS is ClusterNode+Snapshots.swift.
//
// The body is one JSON document, the tree in the export format the log's batches use:
//
//   {"v":1,"ns":"<namespace>","seq":<C>,"rules":"<source>"|null,"tree":<node>}
//
// `C` is the sequence of the last log message it holds. The body is split into chunks of at most 512 KiB (within
// the servers' default `max_payload` of 1 MiB), each published on `canopy.snap.<ns>.chunks` with the headers
// `Canopy-Snapshot: <id>` and `Canopy-Chunk: <i>/<n>`; then one manifest on `canopy.snap.<ns>.manifest`:
//
//   {"v":1,"id":"<id>","seq":<C>,"first":<stream seq of chunk 0>,"last":<of chunk n-1>,"chunks":<n>,
//    "bytes":<body length>,"sha256":"<hex of the body>"}
//
// A snapshot exists once its manifest does: a writer that dies between chunks leaves chunks no manifest names,
// which readers never see. A reader takes the chunks between `first` and `last` that carry the manifest's id
// (two writers may interleave), and uses the snapshot only if there are `n` of them, in order, of `bytes` bytes
// whose SHA-256 is the manifest's, and the body decodes to the namespace and sequence the manifest names.

import CanopyCore

/// A namespace's state at log sequence `sequence`.
struct ClusterSnapshot: Sendable {
    var namespace: String
    var sequence: UInt64
    var rules: String?
    var tree: Node

    static let version: Int64 = 1
    /// Chunks stay well below the servers' default `max_payload` (1 MiB).
    static let chunkSize = 512 * 1024

    /// The body: one JSON document.
    func encode() -> [UInt8] {
        var out: [UInt8] = []
        JSONValue.object([
            JSONMember("v", .int(Self.version)), JSONMember("ns", .string(namespace)),
            JSONMember("seq", .int(Int64(sequence))), JSONMember("rules", rules.map { .string($0) } ?? .null),
            JSONMember("tree", tree.json(export: true)),
        ]).write(into: &out)
        return out
    }

    /// `body` in chunks of at most `size` bytes (one empty chunk for an empty body).
    static func split(_ body: [UInt8], size: Int = chunkSize) -> [ArraySlice<UInt8>] {
        guard !body.isEmpty else { return [body[...]] }
        return stride(from: 0, to: body.count, by: size).map { body[$0..<min($0 + size, body.count)] }
    }

    /// The snapshot the manifest describes, from the chunk messages read between its `first` and `last` (others'
    /// chunks among them are skipped).
    /// - Throws: `ClusterSnapshotError` saying what is missing or wrong; the snapshot must then not be used.
    static func assemble(
        _ manifest: SnapshotManifest, namespace: String, messages: [(headers: NATSHeaderLookup, payload: [UInt8])]
    ) throws(ClusterSnapshotError) -> ClusterSnapshot
    {
        var body: [UInt8] = []
        body.reserveCapacity(manifest.bytes)
        var next = 0
        for message in messages where message.headers("Canopy-Snapshot") == manifest.id {
            guard message.headers("Canopy-Chunk") == "\(next)/\(manifest.chunks)" else {
                throw ClusterSnapshotError("chunk \(next) of \(manifest.chunks) is missing or out of order")
            }
            body += message.payload
            next += 1
        }
        guard next == manifest.chunks else {
            throw ClusterSnapshotError("\(next) of its \(manifest.chunks) chunks are in the stream")
        }
        guard body.count == manifest.bytes else {
            throw ClusterSnapshotError("its chunks hold \(body.count) bytes, the manifest says \(manifest.bytes)")
        }
        guard Hash.sha256Hex(body) == manifest.sha256 else {
            throw ClusterSnapshotError("its SHA-256 is not the manifest's")
        }
        let snapshot = try decode(body)
        guard snapshot.namespace == namespace, snapshot.sequence == manifest.sequence else {
            throw ClusterSnapshotError("it holds '\(snapshot.namespace)' at \(snapshot.sequence), not the manifest's")
        }
        return snapshot
    }

    static func decode(_ body: [UInt8]) throws(ClusterSnapshotError) -> ClusterSnapshot {
        let json: JSONValue
        do {
            json = try JSONValue.parse(body, options: JSONParseOptions(maxDepth: 1_000))
        } catch {
            throw ClusterSnapshotError("its body is not JSON: \(error)")
        }
        guard json["v"]?.int64Value == version, let namespace = json["ns"]?.stringValue,
            let sequence = json["seq"]?.uint64, let treeJSON = json["tree"]
        else { throw ClusterSnapshotError("its body is not a version \(version) snapshot") }
        let rules: String?
        switch json["rules"] {
        case .string(let source)?: rules = source
        case nil, .null?: rules = nil
        default: throw ClusterSnapshotError("its rules are not text")
        }
        do {
            let tree = try Node.from(json: treeJSON)
            return ClusterSnapshot(namespace: namespace, sequence: sequence, rules: rules, tree: tree)
        } catch {
            throw ClusterSnapshotError("its tree is not a valid node: \(error)")
        }
    }
}

/// Looks a header up by name (a NATS message's headers, or a test's).
typealias NATSHeaderLookup = (String) -> String?

/// What a snapshot's manifest says: which log sequence it covers and where its chunks are.
struct SnapshotManifest: Sendable, Equatable {
    var id: String
    var sequence: UInt64
    var first: UInt64
    var last: UInt64
    var chunks: Int
    var bytes: Int
    var sha256: String
    /// The manifest message's own stream sequence (0 until stored or read).
    var streamSequence: UInt64 = 0

    func encode() -> [UInt8] {
        var out: [UInt8] = []
        JSONValue.object([
            JSONMember("v", .int(ClusterSnapshot.version)), JSONMember("id", .string(id)),
            JSONMember("seq", .int(Int64(sequence))), JSONMember("first", .int(Int64(first))),
            JSONMember("last", .int(Int64(last))), JSONMember("chunks", .int(Int64(chunks))),
            JSONMember("bytes", .int(Int64(bytes))), JSONMember("sha256", .string(sha256)),
        ]).write(into: &out)
        return out
    }

    static func decode(_ payload: [UInt8], streamSequence: UInt64) throws(ClusterSnapshotError) -> SnapshotManifest {
        guard let json = try? JSONValue.parse(payload), json["v"]?.int64Value == ClusterSnapshot.version,
            let id = json["id"]?.stringValue, let sequence = json["seq"]?.uint64, let first = json["first"]?.uint64,
            let last = json["last"]?.uint64, let chunks = json["chunks"]?.int64Value, chunks > 0,
            let bytes = json["bytes"]?.int64Value, bytes >= 0, let sha256 = json["sha256"]?.stringValue,
            first <= last
        else { throw ClusterSnapshotError("a malformed manifest at stream sequence \(streamSequence)") }
        return SnapshotManifest(
            id: id, sequence: sequence, first: first, last: last, chunks: Int(chunks), bytes: Int(bytes),
            sha256: sha256, streamSequence: streamSequence)
    }
}

struct ClusterSnapshotError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension JSONValue {
    fileprivate var uint64: UInt64? { int64Value.flatMap { $0 >= 0 ? UInt64($0) : nil } }
}
