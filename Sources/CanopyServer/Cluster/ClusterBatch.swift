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
