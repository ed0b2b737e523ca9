// Node -- the immutable data tree: a leaf (bool, number, string) or a sorted list of non-empty children.
//
// Representation: a node is either empty, a leaf holding one primitive, or an internal node holding its children
// sorted by `compareKeys` (Firebase key order) in `NodeChildren`: one contiguous array when small, a persistent
// B+tree of such arrays when large. Lookups binary-search, so `child(_:)` costs O(log n) key comparisons. Every
// node may carry a priority (a string or a finite number); empty nodes never do. Invariants, kept by every
// initializer: children are non-empty, their keys are distinct and strictly increasing, and a leaf has no
// children.
//
// Updates (`Node+Update.swift`) return new trees that share every untouched subtree with the old one: a write
// at depth d copies the d nodes along the path; each copy costs one leaf of its children and the branches
// above it (see `NodeChildren`).
//
// A node is `Sendable` and never changes; snapshots cross threads freely. The wire hash (`Node+Hash.swift`)
// is computed on first use and kept in one atomic word of the node.

import Synchronization

/// An immutable node of the data tree.
///
/// ```swift
/// let tree = try Node.from(json: .object([JSONMember("a", .int(1))]))
/// let updated = tree.setting(Node(leaf: .string("x")), at: Path(segments: ["b", "c"]))
/// updated.node(at: Path(segments: ["b"])).childCount  // 1
/// ```
public final class Node: Sendable {
    // Every node of every loaded tree is one of these, so its size is the tree's: 56 bytes (a 64-byte heap block)
    // where a leaf value, a priority, the children and a locked hash side by side took 96 (112). A 200 MB
    // namespace holds about 2.6 million nodes.

    /// A leaf's primitive, or the children (none for the empty node): a node is never both.
    private enum Content: Sendable {
        case leaf(JSONValue)
        case children(NodeChildren)
    }

    /// A priority, boxed: most nodes have none and pay one nil reference for it.
    private final class PriorityBox: Sendable {
        let value: JSONValue
        init(_ value: JSONValue) { self.value = value }
    }

    /// A computed wire hash, boxed so that a node can hold it in one atomic word.
    private final class HashBox: Sendable {
        let text: String
        init(_ text: String) { self.text = text }
    }

    private let content: Content
    private let priorityBox: PriorityBox?
    /// The wire hash once computed: the bits of a retained `HashBox` reference, 0 until then. Set once (the first
    /// of racing writers wins; the hash is the same), released with the node.
    private let hashBits = Atomic<UInt>(0)

    /// The primitive of a leaf; nil for internal and empty nodes.
    var leafValue: JSONValue? {
        if case .leaf(let value) = content { return value }
        return nil
    }
    /// The priority: `.string`, `.int` or `.double`; nil when none.
    var priorityValue: JSONValue? { priorityBox?.value }
    /// Children in Firebase key order; empty for leaves and the empty node.
    var entries: NodeChildren {
        if case .children(let children) = content { return children }
        return .none
    }

    /// The wire hash if it was computed already.
    var cachedHash: String? {
        let bits = hashBits.load(ordering: .acquiring)
        guard bits != 0, let pointer = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<HashBox>.fromOpaque(pointer).takeUnretainedValue().text
    }

    /// Keeps `hash` as this node's wire hash, unless one was kept first.
    func cacheHash(_ hash: String) {
        let box = Unmanaged.passRetained(HashBox(hash))
        let bits = UInt(bitPattern: box.toOpaque())
        if !hashBits.compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing).exchanged {
            box.release()
        }
    }

    /// Keeps `other`'s computed hash as this node's (sharing its box), unless this node has one: only for nodes
    /// known to hold the same data (`hasSameData`).
    func adoptHash(of other: Node) {
        if hashBits.load(ordering: .acquiring) != 0 { return }
        let bits = other.hashBits.load(ordering: .acquiring)
        guard bits != 0, let pointer = UnsafeRawPointer(bitPattern: bits) else { return }
        // The box lives while `other` does, and `other` lives for this call: retained once more for this node.
        let box = Unmanaged<HashBox>.fromOpaque(pointer).retain()
        if !hashBits.compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing).exchanged {
            box.release()
        }
    }

    deinit {
        let bits = hashBits.load(ordering: .acquiring)
        if bits != 0, let pointer = UnsafeRawPointer(bitPattern: bits) {
            Unmanaged<HashBox>.fromOpaque(pointer).release()
        }
    }

    /// The empty node (`null`): no value, no children, no priority.
    public static let empty = Node(validatedLeaf: nil, priority: nil, children: .none)

    /// Trusted initializer: callers guarantee the invariants listed at the top of this file.
    init(validatedLeaf: JSONValue?, priority: JSONValue?, children: NodeChildren) {
        let isEmpty = validatedLeaf == nil && children.isEmpty
        self.content = validatedLeaf.map { .leaf($0) } ?? .children(children)
        self.priorityBox = isEmpty ? nil : priority.map { PriorityBox($0) }
    }

    /// Trusted initializer from a sorted array (see the invariants at the top of this file).
    convenience init(validatedLeaf: JSONValue?, priority: JSONValue?, entries: [(key: String, node: Node)]) {
        self.init(validatedLeaf: validatedLeaf, priority: priority, children: NodeChildren(sorted: entries))
    }

    /// Creates a leaf.
    ///
    /// - Parameters:
    ///   - leaf: A boolean, finite number or string. `.null` makes an empty node. Objects and arrays are
    ///     programmer errors; build those with `Node.from(json:at:)` or `init(children:priority:)`.
    ///   - priority: A string, finite number, or nil/`.null` for none.
    public convenience init(leaf: JSONValue, priority: JSONValue? = nil) {
        switch leaf {
        case .null:
            self.init(validatedLeaf: nil, priority: nil, entries: [])
        case .bool, .int, .string:
            self.init(validatedLeaf: leaf, priority: Node.checkedPriority(priority), entries: [])
        case .double(let d):
            precondition(d.isFinite, "Node leaves must be finite numbers")
            self.init(validatedLeaf: leaf, priority: Node.checkedPriority(priority), entries: [])
        case .array, .object:
            preconditionFailure("Node(leaf:) needs a primitive; use Node.from(json:) for objects and arrays")
        }
    }

    /// Creates an internal node from children in any order. Empty children are dropped.
    ///
    /// - Parameters:
    ///   - children: Key/node pairs. Keys must be valid (`Key.isValid`) and distinct (programmer error otherwise).
    ///   - priority: A string, finite number, or nil/`.null` for none. Ignored when no child remains.
    public convenience init(children: some Sequence<(key: String, node: Node)>, priority: JSONValue? = nil) {
        var list = children.filter { !$0.node.isEmpty }
        list.sort { compareKeys($0.key, $1.key) < 0 }
        for i in list.indices.dropFirst() {
            precondition(compareKeys(list[i - 1].key, list[i].key) != 0, "Node(children:) got a duplicate key")
        }
        self.init(validatedLeaf: nil, priority: Node.checkedPriority(priority), entries: list)
    }

    /// This node with its children packed (`PackedChildren`), as a load or a parse packs them: itself when they are
    /// packed already or cannot be (more than `NodeChildren.flatLimit`, or no plain leaf among them). A copy the
    /// publish engine places is then packed like the stored copy parsed from the same JSON, and the two compare by
    /// their bytes (`PackedChildren.sameData`).
    public func packingChildren() -> Node {
        guard case .children(let children) = content, !children.isPacked, children.count <= NodeChildren.flatLimit,
            let packed = PackedChildren(sorted: Array(children), limit: NodeChildren.flatLimit)
        else { return self }
        return Node(validatedLeaf: nil, priority: priorityValue, children: NodeChildren(packed: packed))
    }

    static func checkedPriority(_ priority: JSONValue?) -> JSONValue? {
        switch priority {
        case nil, .null?: return nil
        case .string?, .int?: return priority
        case .double(let d)?:
            precondition(d.isFinite, "priorities must be finite numbers")
            return priority
        default: preconditionFailure("a priority must be a string or a number")
        }
    }

    /// Whether this is the empty node (`null`).
    public var isEmpty: Bool { leafValue == nil && entries.isEmpty }
    /// Whether this is a leaf (a boolean, number or string).
    public var isLeaf: Bool { leafValue != nil }
    /// The primitive of a leaf (`.bool`, `.int`, `.double` or `.string`); nil for internal and empty nodes.
    public var value: JSONValue? { leafValue }
    /// The priority (`.string`, `.int` or `.double`), or nil when there is none.
    public var priority: JSONValue? { priorityValue }
    /// The number of children (0 for leaves).
    public var childCount: Int { entries.count }
    /// Whether the node has at least one child.
    public var hasChildren: Bool { !entries.isEmpty }
    /// The children in Firebase key order (`compareKeys`).
    public var children: NodeChildren { entries }
    /// The keys of the children in Firebase key order.
    public var childKeys: [String] { entries.map(\.key) }

    /// The child named `key`, or `.empty` when absent. `.priority` returns the priority as a leaf.
    public func child(_ key: String) -> Node {
        let slot = entries.slot(of: key)
        if slot.found { return entries.node(at: slot) }
        if sameKey(key, Key.priority), let p = priorityValue {
            return Node(validatedLeaf: p, priority: nil, entries: [])
        }
        return .empty
    }

    /// Whether a child named `key` exists.
    public func hasChild(_ key: String) -> Bool { entries.slot(of: key).found }

    /// The node at `path` below this one, or `.empty`.
    public func node(at path: Path) -> Node {
        node(at: path.segments[...])
    }

    /// The node at the relative path `segments` below this one, or `.empty`.
    public func node(at segments: ArraySlice<String>) -> Node {
        var node = self
        for key in segments {
            node = node.child(key)
            if node.isEmpty { return .empty }
        }
        return node
    }
}

extension Node: Equatable {
    /// Structural equality: same leaf value (numbers compared numerically, strings by exact bytes), same
    /// priority, same keys (exact bytes) with equal children. Identical instances short-cut.
    public static func == (a: Node, b: Node) -> Bool {
        if a === b { return true }
        guard primitivesEqual(a.leafValue, b.leafValue), primitivesEqual(a.priorityValue, b.priorityValue),
            a.entries.count == b.entries.count
        else { return false }
        for (x, y) in zip(a.entries, b.entries) {
            guard sameKey(x.key, y.key), x.node == y.node else { return false }
        }
        return true
    }
}

/// Equality of two optional primitives: numbers numerically (`.int(1) == .double(1)`), strings by exact bytes.
func primitivesEqual(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
    switch (a, b) {
    case (nil, nil): return true
    case (let x?, let y?): return comparePrimitives(x, y) == 0
    default: return false
    }
}
