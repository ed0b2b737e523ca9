// ClusterBatch -- what one message of a namespace's log carries (Cluster.md#What-is-replicated).
//
// A batch is the writes of one group commit as the tree saw them: for each committed operation, in order, the
// paths it wrote and the node at each right after it. A node replaying the log applies them with
// `Namespace.applying` and derives its own store rows, so the log does not depend on how a store lays the tree
// out. Two other kinds of message share the subject: the takeover marker a new owner publishes (it fences the
// former owner, and carries no data) and a namespace's rules text (rules travel with the data, in the same
// order, so a new owner serves the rules that were in force).
//
//   {"v":1,"ops":[{"w":[[["a","b"],<node, export format>],…],"m":["a"]|null},…]}
//   {"v":1,"takeover":"<node>"}
//   {"v":1,"rules":"<rules source>"}

import CanopyCore
import CanopyNATS

/// One decoded log message.
enum ClusterBatch {
    /// Operations in commit order; each is its writes (path, node after the write) and its merge base.
    case operations([Operation])
    /// A new owner's takeover marker.
    case takeover(node: String)
    /// The namespace's rules were replaced by this source.
    case rules(String)

    struct Operation {
        var writes: [Write]
        var mergeBase: Path?
    }

    struct Write {
        var path: Path
        var node: Node
    }

    static let version: Int64 = 1

    /// The payload of a batch of committed operations.
    static func encode(_ operations: [CommittedOperation]) -> [UInt8] {
        let ops: [JSONValue] = operations.map { operation in
            let writes: [JSONValue] = operation.paths.map { path in
                .array([keys(path), operation.root.node(at: path).json(export: true)])
            }
            return .object([
                JSONMember("w", .array(writes)), JSONMember("m", operation.mergeBase.map(keys) ?? .null),
            ])
        }
        var out: [UInt8] = []
        JSONValue.object([JSONMember("v", .int(version)), JSONMember("ops", .array(ops))]).write(into: &out)
        return out
    }

    static func encodeTakeover(node: String) -> [UInt8] {
        var out: [UInt8] = []
        JSONValue.object([JSONMember("v", .int(version)), JSONMember("takeover", .string(node))]).write(into: &out)
        return out
    }

    static func encodeRules(_ source: String) -> [UInt8] {
        var out: [UInt8] = []
        JSONValue.object([JSONMember("v", .int(version)), JSONMember("rules", .string(source))]).write(into: &out)
        return out
    }

    /// Decodes a log message; anything that is not a batch this version wrote is an error (a node must not skip
    /// a batch it does not understand: it would serve a tree the log does not hold).
    static func decode(_ payload: [UInt8]) throws(ClusterBatchError) -> ClusterBatch {
        let json: JSONValue
        do {
            json = try JSONValue.parse(payload)
        } catch {
            throw ClusterBatchError("not JSON: \(error)")
        }
        guard json["v"]?.int64Value == version else { throw ClusterBatchError("unknown version") }
        if let node = json["takeover"]?.stringValue { return .takeover(node: node) }
        if let rules = json["rules"]?.stringValue { return .rules(rules) }
        guard let ops = json["ops"]?.arrayValue else { throw ClusterBatchError("no operations") }
        var operations: [Operation] = []
        operations.reserveCapacity(ops.count)
        for op in ops {
            guard let writes = op["w"]?.arrayValue else { throw ClusterBatchError("an operation without writes") }
            var decoded: [Write] = []
            decoded.reserveCapacity(writes.count)
            for write in writes {
                guard let pair = write.arrayValue, pair.count == 2 else { throw ClusterBatchError("a malformed write") }
                let path = try path(pair[0])
                do {
                    decoded.append(Write(path: path, node: try Node.from(json: pair[1], at: path)))
                } catch {
                    throw ClusterBatchError("a write at \(path) is not a valid node: \(error)")
                }
            }
            let base: Path?
            switch op["m"] {
            case nil, .null?: base = nil
            case let value?: base = try path(value)
            }
            operations.append(Operation(writes: decoded, mergeBase: base))
        }
        return .operations(operations)
    }

    /// `tree` with the operations applied in order.
    static func apply(_ operations: [Operation], to tree: Node) -> Node {
        var current = tree
        for operation in operations {
            current = Namespace.applying(operation.writes.map { ($0.path, $0.node) }, to: current)
        }
        return current
    }

    private static func keys(_ path: Path) -> JSONValue { .array(path.segments.map { .string($0) }) }

    private static func path(_ value: JSONValue) throws(ClusterBatchError) -> Path {
        guard let keys = value.arrayValue else { throw ClusterBatchError("a path that is not a list of keys") }
        var segments: [String] = []
        for key in keys {
            guard let key = key.stringValue, !key.isEmpty else { throw ClusterBatchError("a path with a bad key") }
            segments.append(key)
        }
        return Path(segments: segments)
    }
}

struct ClusterBatchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = "malformed log message: " + description }
}

// MARK: - Batches in parts

/// A batch larger than one NATS message, stored as consecutive log messages (Cluster.md#Large-batches).
///
/// Each part carries a slice of the batch's bytes and the headers `Canopy-Part: <i>/<n>` and `Canopy-Batch: <id>`
/// (the first part's message id). Every part is fenced on the one before it like any append, so parts are
/// consecutive in the subject. A reader joins the parts and applies the batch when its last part arrives, at that
/// part's sequence: a batch applies whole or not at all. Parts that are not followed by the rest of their batch
/// (the owner died or lost NATS between two parts, so the batch was never acknowledged) are dropped when the next
/// whole message or first part arrives, and at the end of a replay.
enum BatchParts {
    static let partHeader = "Canopy-Part"
    static let batchHeader = "Canopy-Batch"
    /// Room left in each message for the NATS and JetStream headers.
    static let headerRoom = 4096

    /// `payload` cut into slices of at most `limit` bytes (one slice when it fits).
    static func split(_ payload: [UInt8], limit: Int) -> [ArraySlice<UInt8>] {
        let size = Swift.max(1, limit)
        guard payload.count > size else { return [payload[...]] }
        return stride(from: 0, to: payload.count, by: size).map { payload[$0..<Swift.min($0 + size, payload.count)] }
    }

    /// The `Canopy-Part` header value.
    static func label(_ index: Int, of count: Int) -> String { "\(index)/\(count)" }

    /// Parses `i/n` (0 ≤ i < n).
    static func parse(_ value: String) -> (index: Int, count: Int)? {
        let pieces = value.split(separator: "/", omittingEmptySubsequences: false)
        guard pieces.count == 2, let index = Int(pieces[0]), let count = Int(pieces[1]), count > 1, index >= 0,
            index < count
        else { return nil }
        return (index, count)
    }
}

/// Joins a subject's log messages into batches, in sequence order (one per reader).
struct BatchAssembler {
    private var batch: String?
    private var expected = 0
    private var count = 0
    private var bytes: [UInt8] = []
    /// Parts dropped because their batch was never completed (for the log).
    private(set) var droppedParts = 0

    /// The message's content: the decoded batch for a whole message or a batch's last part, or an empty batch for
    /// a part that is not the last (or one that belongs to no complete batch), so the reader still moves past its
    /// sequence.
    /// - Throws: `ClusterBatchError` for a whole message or joined batch that does not decode, or a malformed
    ///   part header.
    mutating func take(headers: NATSHeaders?, payload: [UInt8]) throws(ClusterBatchError) -> ClusterBatch {
        guard let label = headers?[BatchParts.partHeader] else {
            dropPending()
            return try ClusterBatch.decode(payload)
        }
        guard let (index, total) = BatchParts.parse(label), let id = headers?[BatchParts.batchHeader] else {
            throw ClusterBatchError("a part with a malformed \(BatchParts.partHeader) header '\(label)'")
        }
        if index == 0 {
            dropPending()
            batch = id
            count = total
            expected = 1
            bytes = payload
        } else if batch == id, count == total, expected == index {
            bytes += payload
            expected += 1
        } else {
            dropPending()
            droppedParts += 1
            return .operations([])
        }
        guard expected == count else { return .operations([]) }
        let joined = bytes
        batch = nil
        bytes = []
        return try ClusterBatch.decode(joined)
    }

    /// Drops the parts of a batch that was never completed (at the end of a replay).
    mutating func dropPending() {
        if batch != nil { droppedParts += expected }
        batch = nil
        bytes = []
        expected = 0
        count = 0
    }
}
