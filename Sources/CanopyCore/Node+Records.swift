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
///
/// Records in storage order (`sealsCompletedSubtrees`): rows read back in the order of their keys (the path's
/// segments joined by `/`, compared byte by byte) hold every row of a subtree together, since they all start with
/// its path and `/`. So when a record leaves the previous record's path at some depth, the subtrees it left are
/// complete: each is built into its node then and its slots are freed. The builder's slots then never hold more
/// than one path's worth of records, and the tree is laid out as it is built; without it, every slot lived until
/// `finish`, and after a load the process kept the slots' peak (about twice the tree) as resident memory.
/// A record that comes back into a built subtree (out of order) reopens it: still correct, only slower.
public final class NodeBuilder {
    private final class Slot {
        /// A leaf's value, or the subtree's node once it was sealed: one field, so that the slot stays a 96-byte
        /// block (a separate `built` made every slot 112, and a list of 800,000 leaves 12 MB larger).
        private enum Held {
            case leaf(JSONValue)
            case built(Node)
        }
        private var held: Held?
        var priority: JSONValue?

        var leaf: JSONValue? {
            get {
                if case .leaf(let value)? = held { return value }
                return nil
            }
            set { held = newValue.map { .leaf($0) } }
        }

        /// The subtree's node once it was sealed as complete (its children then are released).
        var built: Node? {
            get {
                if case .built(let node)? = held { return node }
                return nil
            }
            set { held = newValue.map { .built($0) } }
        }
        /// Children in arrival order (usually close to key order, which makes the final sort cheap).
        var keys: [String] = []
        var slots: [Slot] = []
        /// Exact-byte index over `keys`, built once a slot has more than `linearLimit` children.
        var index: [JSONKey: Int]?

        static let linearLimit = 8

        /// The child slot for `key`, created when missing (and reopened when it was sealed).
        func child(_ key: String) -> Slot {
            if let index {
                if let i = index[JSONKey(key)] { return slots[i].reopened() }
            } else {
                for i in keys.indices.reversed() where sameKey(keys[i], key) { return slots[i].reopened() }
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

        /// Builds the subtree into `built` and frees its slots, unless the node would not hold every record: a
        /// priority without children yet is kept as a slot (its children may follow after other keys, as "a/x"
        /// follows "a b"), and so is a leaf below which records arrived (a later null record may uncover it).
        func seal() {
            // A leaf's slot is as small as its node would be, and its parent keeps it until the parent is sealed:
            // building the node now would only hold both.
            guard built == nil, !keys.isEmpty else { return }
            var dropped = false
            let node = NodeBuilder.build(self, releasing: false, dropped: &dropped)
            guard !node.isEmpty, !dropped else { return }
            built = node  // replaces the leaf value, if any
            priority = nil
            keys = []
            slots = []
            index = nil
        }

        /// This slot, made of slots again if it was sealed.
        func reopened() -> Slot {
            if let node = built {
                built = nil
                fill(from: node)
            }
            return self
        }

        private func fill(from node: Node) {
            leaf = node.leafValue
            priority = node.priorityValue
            for (key, child) in node.entries { self.child(key).fill(from: child) }
        }
    }

    private let root = Slot()
    private let sealsCompletedSubtrees: Bool
    /// The path of the previous record and the slots along it (root first): records read back from storage
    /// arrive grouped by prefix, so most lookups reuse a shared prefix instead of hashing every segment.
    private var lastPath: [String] = []
    private var lastSlots: [Slot] = []

    /// Creates an empty builder.
    ///
    /// - Parameter sealsCompletedSubtrees: records arrive in storage order (see the type's comment): subtrees are
    ///   built as soon as they are complete.
    public init(sealsCompletedSubtrees: Bool = false) {
        self.sealsCompletedSubtrees = sealsCompletedSubtrees
    }

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
        if sealsCompletedSubtrees {
            // Left at depth `shared`: the subtrees below it on the previous path are complete, deepest first.
            for slot in lastSlots[(shared + 1)...].reversed() { slot.seal() }
        }
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
        var dropped = false
        return build(slot, releasing: releasing, dropped: &dropped)
    }

    /// - Parameter dropped: set when a record had no effect on the node (a leaf under children, a priority of a
    ///   node left empty), which a later record could still give one.
    private static func build(_ slot: Slot, releasing: Bool, dropped: inout Bool) -> Node {
        if let built = slot.built { return built }
        var list: [(key: String, node: Node)] = []
        list.reserveCapacity(slot.keys.count)
        for (key, child) in zip(slot.keys, slot.slots) {
            let node = build(child, releasing: releasing, dropped: &dropped)
            if !node.isEmpty { list.append((key, node)) }
        }
        if slot.leaf != nil && !list.isEmpty || slot.priority != nil && list.isEmpty && slot.leaf == nil {
            dropped = true
        }
        // Released once the node is made, not before: the packed children of a long list, allocated into the
        // slots just freed, were spread over that memory, glibc returns only whole free pages, and a list of
        // 800,000 leaves kept 1.7-2.8 x its file resident instead of 0.7 x (Architecture.md#Loading-a-namespace).
        defer {
            if releasing {
                slot.keys = []
                slot.slots = []
                slot.index = nil
            }
        }
        if !list.isEmpty {
            list.sort { compareKeys($0.key, $1.key) < 0 }
            return Node(validatedLeaf: nil, priority: slot.priority, children: NodeChildren(packing: list))
        }
        guard let leaf = slot.leaf else { return .empty }
        return Node(validatedLeaf: leaf, priority: slot.priority, entries: [])
    }
}
