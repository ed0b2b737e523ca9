// Node+Records -- a tree as a flat list of records (leaves and internal priorities), for storage.
//
// A tree flattens into one `.leaf` record per leaf (its path, value and priority) plus one `.priority` record
// per internal node that has a priority. That is exactly what must be persisted: internal nodes without a
// priority exist only because they have descendants. `forEachRecord` walks a tree depth-first in key order;
// `NodeBuilder` rebuilds a tree from records arriving in any order in O(N log N) — where repeated
// `setting(_:at:)` calls would copy a large child array once per record.

/// One persisted fact about a tree.
public enum NodeRecord: Sendable {
    /// A leaf at `path` (segments from the root) with its value and optional priority.
    case leaf(path: [String], value: JSONValue, priority: JSONValue?)
    /// The priority of the internal node at `path`.
    case priority(path: [String], priority: JSONValue)

    /// The path of the row this record describes.
    public var path: [String] {
        switch self {
        case .leaf(let path, _, _), .priority(let path, _): path
        }
    }
}

extension Node {
    /// Calls `body` for every record of this tree, depth-first in key order, an internal node's priority
    /// before its children.
    ///
    /// - Parameters:
    ///   - base: The absolute path of this node; record paths are `base` + the path below this node.
    ///   - body: Receives each record.
    public func forEachRecord(under base: [String] = [], _ body: (NodeRecord) throws -> Void) rethrows {
        var path = base
        try walkRecords(&path, body)
    }

    private func walkRecords(_ path: inout [String], _ body: (NodeRecord) throws -> Void) rethrows {
        if let leaf = leafValue {
            try body(.leaf(path: path, value: leaf, priority: priorityValue))
            return
        }
        if let p = priorityValue { try body(.priority(path: path, priority: p)) }
        for entry in entries {
            path.append(entry.key)
            defer { path.removeLast() }
            try entry.node.walkRecords(&path, body)
        }
    }
}

/// Rebuilds a tree from `NodeRecord`s arriving in any order (e.g. rows read back from storage).
///
/// ```swift
/// let builder = NodeBuilder()
/// try store.loadAll { row in try builder.add(.leaf(path: row.path, value: row.value, priority: row.priority)) }
/// let tree = builder.build()
/// ```
/// Records below a leaf's path win over the leaf (the leaf disappears); a later record for the same leaf path
/// replaces the earlier one; priorities of nodes that end up empty are dropped. Not thread-safe: one builder,
/// one thread.
public final class NodeBuilder {
    private final class Slot {
        var leaf: JSONValue?
        var priority: JSONValue?
        /// Children in arrival order (usually close to key order, which makes the final sort cheap).
        var keys: [String] = []
        var slots: [Slot] = []
        /// Exact-byte index over `keys`, built once a slot has more than `linearLimit` children.
        var index: [JSONKey: Int]?

        static let linearLimit = 8

        /// The child slot for `key`, created when missing.
        func child(_ key: String) -> Slot {
            if let index {
                if let i = index[JSONKey(key)] { return slots[i] }
            } else {
                for i in keys.indices.reversed() where sameKey(keys[i], key) { return slots[i] }
            }
            let slot = Slot()
            keys.append(key)
            slots.append(slot)
            if index != nil {
                index![JSONKey(key)] = keys.count - 1
            } else if keys.count > Slot.linearLimit {
                var built: [JSONKey: Int] = [:]
                for (i, k) in keys.enumerated() { built[JSONKey(k)] = i }
                index = built
            }
            return slot
        }
    }

    private let root = Slot()
    /// The path of the previous record and the slots along it (root first): records read back from storage
    /// arrive grouped by prefix, so most lookups reuse a shared prefix instead of hashing every segment.
    private var lastPath: [String] = []
    private var lastSlots: [Slot] = []

    /// Creates an empty builder.
    public init() {}

    /// Adds one record.
    ///
    /// - Throws: `DataError` when a path is deeper than 32 segments or has an invalid key, a leaf value is
    ///   not a finite primitive, or a priority is not a string or finite number (null priorities are ignored).
    public func add(_ record: NodeRecord) throws(DataError) {
        switch record {
        case .leaf(let path, let value, let priority):
            let slot = try slot(at: path)
            switch value {
            case .null: slot.leaf = nil
            case .bool, .int, .string: slot.leaf = value
            case .double(let d):
                guard d.isFinite else { throw DataError(.invalidNumber, at: Path(segments: path)) }
                slot.leaf = value
            case .array, .object: throw DataError(.invalidValueWrapper, at: Path(segments: path))
            }
            slot.priority = try checked(priority, path)
        case .priority(let path, let priority):
            try slot(at: path).priority = try checked(priority, path)
        }
    }

    /// The tree built from every record added so far.
    public func build() -> Node {
        NodeBuilder.build(root, releasing: false)
    }

    /// The tree built from every record added so far; the builder is left empty.
    ///
    /// Each record's slot is released as soon as its node is built, so a large tree's nodes reuse the memory of
    /// its slots instead of being laid out between them (which left RSS at the slots' peak after loading).
    public func finish() -> Node {
        lastPath = []
        lastSlots = []
        return NodeBuilder.build(root, releasing: true)
    }

    private func slot(at path: [String]) throws(DataError) -> Slot {
        guard path.count <= Path.maxDepth else { throw DataError(.tooDeep, at: Path(segments: path)) }
        var shared = 0
        while shared < path.count && shared < lastPath.count && sameKey(path[shared], lastPath[shared]) {
            shared += 1
        }
        if lastSlots.isEmpty { lastSlots = [root] }
        lastSlots.removeLast(lastSlots.count - 1 - shared)
        lastPath.removeLast(lastPath.count - shared)
        var slot = lastSlots[shared]
        for i in shared..<path.count {
            let key = path[i]
            guard Key.isValid(key) else { throw DataError(.invalidKey, at: Path(segments: Array(path[..<i]))) }
            slot = slot.child(key)
            lastPath.append(key)
            lastSlots.append(slot)
        }
        return slot
    }

    private func checked(_ priority: JSONValue?, _ path: [String]) throws(DataError) -> JSONValue? {
        switch priority {
        case nil, .null?: return nil
        case .int?, .string?: return priority
        case .double(let d)? where d.isFinite: return priority
        default: throw DataError(.invalidPriority, at: Path(segments: path))
        }
    }

    private static func build(_ slot: Slot, releasing: Bool) -> Node {
        var list: [(key: String, node: Node)] = []
        list.reserveCapacity(slot.keys.count)
        for (key, child) in zip(slot.keys, slot.slots) {
            let node = build(child, releasing: releasing)
            if !node.isEmpty { list.append((key, node)) }
        }
        if releasing {
            slot.keys = []
            slot.slots = []
            slot.index = nil
        }
        if !list.isEmpty {
            list.sort { compareKeys($0.key, $1.key) < 0 }
            return Node(validatedLeaf: nil, priority: slot.priority, children: NodeChildren(packing: list))
        }
        guard let leaf = slot.leaf else { return .empty }
        return Node(validatedLeaf: leaf, priority: slot.priority, entries: [])
    }
}
