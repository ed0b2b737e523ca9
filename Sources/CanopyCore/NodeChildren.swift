// NodeChildren -- the sorted children of an internal node: one array when small, a persistent B+tree when large.
//
// Children are kept sorted by `compareKeys`. Up to `leafLimit` children live in one contiguous array. A longer
// list is a B+tree: its entries sit in leaves of at most `leafLimit`, under branches of at most `branchLimit`
// kids, each branch holding its kids' first keys (for searches) and the number of children before each kid (for
// positions). Nodes are immutable and shared between versions, so one insert, replace or remove copies one leaf
// and the branches above it: about 64 + 128 · depth references, where depth is 2 for 260,000 children and 3 for
// 16 million. (The earlier two-level list of √n-sized chunks copied about 2 √n: 800 references at 150,000
// children, 2,000 at a million; an insert into a list of 150,000 spent a quarter of a durable PUT's loop time
// copying and freeing them.)
//
// Entries are a struct (key, node, and the key's integer value cached for ordering) rather than the public
// `(key, node)` tuple: an array of tuples is copied element by element through the runtime's generic tuple
// witnesses, a struct through its own compiled copy; and a search compares cached integers instead of parsing
// each probed key again.

/// The children of a node in Firebase key order, as a random-access collection of `(key, node)` pairs.
public struct NodeChildren: RandomAccessCollection, Sendable {
    public typealias Element = (key: String, node: Node)
    public typealias Index = Int

    /// Lists up to this size stay one array; a leaf of the tree holds at most this many entries.
    static let flatLimit = 64
    /// The most kids one branch of the tree holds.
    static let branchLimit = 64

    /// One stored child, with its key's integer value cached for ordering (binary searches compare a probe key
    /// with about log₂ n stored keys; parsing each of them as an integer every time was the larger part of a
    /// lookup).
    struct Entry: Sendable {
        let key: String
        let node: Node
        /// `Key.integerValue(key)`, or `Entry.notInteger`.
        let integer: Int64

        static let notInteger = Int64.max

        init(key: String, node: Node) {
            self.key = key
            self.node = node
            self.integer = Entry.integer(of: key)
        }

        /// `Key.integerValue(key)`, or `notInteger`: what ordering compares first.
        static func integer(of key: String) -> Int64 {
            Key.integerValue(key).map(Int64.init) ?? notInteger
        }
    }

    /// A kid's first key, with its cached integer value (what a branch search compares).
    struct FirstKey: Sendable {
        let key: String
        let integer: Int64

        init(_ entry: Entry) {
            key = entry.key
            integer = entry.integer
        }

        init(key: String) {
            self.key = key
            integer = Entry.integer(of: key)
        }
    }

    /// A leaf of the tree: its entries, or, as a load builds a long list, its children packed (`PackedChildren`)
    /// when one at least is a plain leaf. A change to a packed leaf unpacks that leaf alone.
    enum Leaf: Sendable {
        case entries([Entry])
        case packed(PackedChildren)

        /// The children of `piece` (sorted, at most `flatLimit`), packed when `PackedChildren` takes them.
        init(packing piece: [Element]) {
            if let packed = PackedChildren(sorted: piece, limit: NodeChildren.flatLimit) {
                self = .packed(packed)
            } else {
                self = .entries(piece.map { Entry(key: $0.key, node: $0.node) })
            }
        }

        var count: Int {
            switch self {
            case .entries(let list): list.count
            case .packed(let packed): packed.count
            }
        }

        /// The entries, made from the packed bytes when packed (a new node per packed leaf).
        var entries: [Entry] {
            switch self {
            case .entries(let list): list
            case .packed(let packed):
                (0..<packed.count).map { Entry(key: packed.key(at: $0), node: packed.node(at: $0)) }
            }
        }

        func entry(at position: Int) -> Entry {
            switch self {
            case .entries(let list): list[position]
            case .packed(let packed):
                Entry(key: packed.key(at: position), node: packed.node(at: position))
            }
        }

        func key(at position: Int) -> String {
            switch self {
            case .entries(let list): list[position].key
            case .packed(let packed): packed.key(at: position)
            }
        }

        var firstKey: FirstKey {
            switch self {
            case .entries(let list): FirstKey(list[0])
            case .packed(let packed): FirstKey(key: packed.key(at: 0))
            }
        }
    }

    /// The kids of a branch: all leaves (height 1) or all branches.
    enum Kids: Sendable {
        case leaves([Leaf])
        case branches([Branch])
    }

    /// An immutable inner node of the tree.
    final class Branch: Sendable {
        let kids: Kids
        /// The first key under each kid.
        let firsts: [FirstKey]
        /// The number of children before each kid (`offsets[0] == 0`).
        let offsets: [Int]
        /// The number of children under this branch.
        let count: Int

        init(kids: Kids, firsts: [FirstKey], offsets: [Int], count: Int) {
            self.kids = kids
            self.firsts = firsts
            self.offsets = offsets
            self.count = count
        }

        /// A branch over `leaves` (non-empty, in order).
        convenience init(leaves: [Leaf]) {
            let (offsets, total) = Branch.offsets(of: leaves.map(\.count))
            self.init(kids: .leaves(leaves), firsts: leaves.map(\.firstKey), offsets: offsets, count: total)
        }

        /// A branch over `branches` (non-empty, in order).
        convenience init(branches: [Branch]) {
            let (offsets, total) = Branch.offsets(of: branches.map(\.count))
            self.init(
                kids: .branches(branches), firsts: branches.map { $0.firsts[0] }, offsets: offsets, count: total)
        }

        /// The number of children before each kid of these sizes, and their total.
        private static func offsets(of sizes: [Int]) -> (offsets: [Int], total: Int) {
            var offsets: [Int] = []
            offsets.reserveCapacity(sizes.count)
            var total = 0
            for size in sizes {
                offsets.append(total)
                total += size
            }
            return (offsets, total)
        }

        var kidCount: Int { offsets.count }

        /// The kid holding `position` (the last whose offset is at most `position`).
        func kid(holding position: Int) -> Int {
            offsets.withUnsafeBufferPointer { offsets in
                var low = 0
                var high = offsets.count
                while high - low > 1 {
                    let mid = (low + high) / 2
                    if offsets[mid] <= position { low = mid } else { high = mid }
                }
                return low
            }
        }

        /// The kid an insert at `position` goes into: the one before `position`, so that only an insert at the
        /// very front changes a kid's first key (the last whose offset is below `position`; 0 for position 0).
        func kid(insertingAt position: Int) -> Int {
            position == 0 ? 0 : kid(holding: position - 1)
        }

        /// The number of leaves below (for tests).
        var leafCount: Int {
            switch kids {
            case .leaves(let leaves): leaves.count
            case .branches(let branches): branches.reduce(0) { $0 + $1.leafCount }
            }
        }
    }

    private enum Storage: Sendable {
        case flat([Entry])
        case tree(Branch)
        /// Leaves packed in bytes, other children by reference (see `PackedChildren`): never empty, at most
        /// `flatLimit`.
        case packed(PackedChildren)
    }

    private let storage: Storage

    /// The empty list.
    static let none = NodeChildren(storage: .flat([]))

    private init(storage: Storage) { self.storage = storage }

    /// Wraps children that are already sorted by `compareKeys`, distinct and non-empty (not checked).
    init(sorted list: [Element]) {
        self.init(sortedEntries: list.map { Entry(key: $0.key, node: $0.node) })
    }

    /// Wraps children that are already sorted by `compareKeys`, distinct and non-empty (not checked), packed
    /// (`PackedChildren`) when they are 1 to `flatLimit` and one at least is a leaf without a priority. A longer
    /// list is a tree whose leaves are packed likewise, each on its own.
    init(packing list: [Element]) {
        if list.count > NodeChildren.flatLimit {
            self.init(leaves: NodeChildren.evenPieces(of: list[...], limit: NodeChildren.flatLimit).map(Leaf.init))
        } else if let packed = PackedChildren(sorted: list, limit: NodeChildren.flatLimit) {
            self.init(storage: .packed(packed))
        } else {
            self.init(sorted: list)
        }
    }

    /// Wraps children already packed.
    init(packed: PackedChildren) { self.init(storage: .packed(packed)) }

    /// Whether the children are packed (`PackedChildren`).
    var isPacked: Bool { packed != nil }

    /// The number of packed leaves of the tree (0 when flat or packed whole); for tests.
    var packedLeafCount: Int {
        guard case .tree(let root) = storage else { return 0 }
        func count(_ branch: Branch) -> Int {
            switch branch.kids {
            case .leaves(let leaves): leaves.count { if case .packed = $0 { true } else { false } }
            case .branches(let branches): branches.reduce(0) { $0 + count($1) }
            }
        }
        return count(root)
    }

    /// The packed children, when they are packed.
    var packed: PackedChildren? {
        if case .packed(let packed) = storage { return packed }
        return nil
    }

    /// The key of the child at `position`, without making its node when the children are packed.
    func key(at position: Int) -> String {
        switch storage {
        case .packed(let packed): return packed.key(at: position)
        case .flat(let list): return list[position].key
        case .tree:
            let (leaf, inner) = leaf(holding: position)
            return leaf.key(at: inner)
        }
    }

    /// Whether these are exactly `children` (sorted, as built against these): packed, the same keys and, for a
    /// packed leaf, the same value bit for bit, for any other child the same instance (`PackedChildren.holdsExactly`);
    /// otherwise the same `Node` instances position by position (the keys are known to match).
    func holdsExactly(_ children: [Element]) -> Bool {
        guard children.count == count else { return false }
        switch storage {
        case .packed(let packed): return packed.holdsExactly(children[...])
        case .flat: return zip(children, self).allSatisfy { $0.node === $1.node }
        case .tree(let root):
            // Leaf by leaf: a packed one compares its values, any other its instances.
            var start = 0
            func holds(_ branch: Branch) -> Bool {
                switch branch.kids {
                case .leaves(let leaves):
                    for leaf in leaves {
                        let piece = children[start..<(start + leaf.count)]
                        start += leaf.count
                        switch leaf {
                        case .packed(let packed): guard packed.holdsExactly(piece) else { return false }
                        case .entries(let list):
                            guard zip(piece, list).allSatisfy({ $0.node === $1.node }) else { return false }
                        }
                    }
                    return true
                case .branches(let branches): return branches.allSatisfy(holds)
                }
            }
            return holds(root)
        }
    }

    private init(sortedEntries list: [Entry]) {
        if list.count <= NodeChildren.flatLimit {
            self.init(storage: .flat(list))
            return
        }
        // Full leaves (a loaded tree wastes nothing), sizes spread evenly, then branches over them likewise.
        self.init(leaves: NodeChildren.evenPieces(of: list[...], limit: NodeChildren.flatLimit).map(Leaf.entries))
    }

    /// A tree over `leaves` (more than one, in order), its branches as full as `evenPieces` makes them.
    private init(leaves: [Leaf]) {
        var level = NodeChildren.evenPieces(of: leaves[...], limit: NodeChildren.branchLimit).map {
            Branch(leaves: $0)
        }
        while level.count > 1 {
            level = NodeChildren.evenPieces(of: level[...], limit: NodeChildren.branchLimit).map {
                Branch(branches: $0)
            }
        }
        storage = .tree(level[0])
    }

    /// `items` cut into the fewest pieces of at most `limit`, their sizes differing by at most one.
    private static func evenPieces<T>(of items: ArraySlice<T>, limit: Int) -> [[T]] {
        let pieces = (items.count + limit - 1) / limit
        var result: [[T]] = []
        result.reserveCapacity(pieces)
        var start = items.startIndex
        for piece in 0..<pieces {
            let size = items.count / pieces + (piece < items.count % pieces ? 1 : 0)
            result.append(Array(items[start..<(start + size)]))
            start += size
        }
        return result
    }

    public var startIndex: Int { 0 }

    public var endIndex: Int {
        switch storage {
        case .flat(let list): list.count
        case .tree(let root): root.count
        case .packed(let packed): packed.count
        }
    }

    public subscript(position: Int) -> Element {
        if case .packed(let packed) = storage {
            precondition(position >= 0 && position < packed.count, "NodeChildren index out of range")
            return packed.element(at: position)
        }
        let entry = self.entry(at: position)
        return (entry.key, entry.node)
    }

    private func entry(at position: Int) -> Entry {
        switch storage {
        case .flat(let list):
            return list[position]
        case .packed(let packed):
            precondition(position >= 0 && position < packed.count, "NodeChildren index out of range")
            return Leaf.packed(packed).entry(at: position)
        case .tree:
            let (leaf, inner) = leaf(holding: position)
            return leaf.entry(at: inner)
        }
    }

    /// The tree's leaf holding child `position`, and the child's position in it.
    private func leaf(holding position: Int) -> (leaf: Leaf, position: Int) {
        guard case .tree(var branch) = storage else { preconditionFailure("a tree only") }
        precondition(position >= 0 && position < branch.count, "NodeChildren index out of range")
        var position = position
        while true {
            let kid = branch.kid(holding: position)
            position -= branch.offsets[kid]
            switch branch.kids {
            case .leaves(let leaves): return (leaves[kid], position)
            case .branches(let branches): branch = branches[kid]
            }
        }
    }

    public func makeIterator() -> Iterator {
        switch storage {
        case .flat(let list): Iterator(leaf: list, root: nil)
        case .tree(let root): Iterator(leaf: [], root: root)
        case .packed(let packed): Iterator(packed: packed)
        }
    }

    /// Walks the leaves in order without per-element searches (and without allocating for flat lists).
    public struct Iterator: IteratorProtocol {
        var leaf: [Entry]
        var position = 0
        /// The branches above the current leaf, each with the index of the kid being walked.
        var stack: [(branch: Branch, kid: Int)] = []
        /// Packed children, walked by `position` instead of `leaf`.
        var packed: PackedChildren?

        init(leaf: [Entry], root: Branch?) {
            self.leaf = leaf
            if let root { descend(from: root) }
        }

        init(packed: PackedChildren) {
            leaf = []
            self.packed = packed
        }

        /// Goes down the first kids from `branch` to a leaf.
        private mutating func descend(from branch: Branch) {
            var branch = branch
            while true {
                stack.append((branch, 0))
                switch branch.kids {
                case .leaves(let leaves):
                    enter(leaves[0])
                    return
                case .branches(let branches): branch = branches[0]
                }
            }
        }

        /// Walks `next` from its first child on.
        private mutating func enter(_ next: Leaf) {
            switch next {
            case .entries(let list):
                leaf = list
                packed = nil
            case .packed(let list):
                leaf = []
                packed = list
            }
            position = 0
        }

        /// Moves to the next leaf; false at the end.
        private mutating func advance() -> Bool {
            while let top = stack.last {
                let next = top.kid + 1
                if next < top.branch.kidCount {
                    stack[stack.count - 1].kid = next
                    switch top.branch.kids {
                    case .leaves(let leaves):
                        enter(leaves[next])
                    case .branches(let branches):
                        descend(from: branches[next])
                    }
                    return true
                }
                stack.removeLast()
            }
            return false
        }

        public mutating func next() -> Element? {
            while true {
                if let packed {
                    if position < packed.count {
                        defer { position += 1 }
                        return packed.element(at: position)
                    }
                } else if position < leaf.count {
                    defer { position += 1 }
                    return leaf.withUnsafeBufferPointer { ($0[position].key, $0[position].node) }
                }
                guard advance() else { return nil }
            }
        }
    }

    /// Where `key` is, or would be inserted: its position among the children, and the child when found.
    struct Slot {
        var position: Int
        var found: Bool
        /// The child at `position` when `found`.
        var node: Node?
    }

    /// Finds `key` by binary search (each branch's first keys, then a leaf).
    func slot(of key: String) -> Slot {
        switch storage {
        case .flat(let list): NodeChildren.search(list, key, Entry.integer(of: key), before: 0)
        case .packed(let packed): NodeChildren.search(packed, key, before: 0)
        case .tree(let root): NodeChildren.search(root, key, Entry.integer(of: key), before: 0)
        }
    }

    /// Descends from `branch` (whose first child is child number `before`) to the leaf that holds or would hold
    /// `key`. Recursive rather than a loop over a variable branch: each branch is borrowed from its parent
    /// instead of retained and released at every level (lookups spent a quarter of their time doing that).
    private static func search(_ branch: Branch, _ key: String, _ probe: Int64, before: Int) -> Slot {
        // The last kid whose first key is <= key (kid 0 when key precedes everything).
        let kid = branch.firsts.withUnsafeBufferPointer { firsts in
            var low = 0
            var high = firsts.count
            while high - low > 1 {
                let mid = (low + high) / 2
                if NodeChildren.compare(firsts[mid].key, firsts[mid].integer, key, probe) <= 0 {
                    low = mid
                } else {
                    high = mid
                }
            }
            return low
        }
        let before = before + branch.offsets[kid]
        switch branch.kids {
        case .leaves(let leaves):
            switch leaves[kid] {
            case .entries(let list): return NodeChildren.search(list, key, probe, before: before)
            case .packed(let packed): return NodeChildren.search(packed, key, before: before)
            }
        case .branches(let branches): return search(branches[kid], key, probe, before: before)
        }
    }

    /// Binary search of one sorted list whose first entry is child number `before`; `probe` is `key`'s integer
    /// value (or `Entry.notInteger`).
    private static func search(_ list: [Entry], _ key: String, _ probe: Int64, before: Int) -> Slot {
        // Fields are read in place: copying an `Entry` out of the array would retain and release its key and node
        // at every probe.
        return list.withUnsafeBufferPointer { entries in
            var low = 0
            var high = entries.count
            while low < high {
                let mid = (low + high) / 2
                let c = compare(entries[mid].key, entries[mid].integer, key, probe)
                if c == 0 { return Slot(position: before + mid, found: true, node: entries[mid].node) }
                if c < 0 { low = mid + 1 } else { high = mid }
            }
            return Slot(position: before + low, found: false, node: nil)
        }
    }

    /// Binary search of packed children whose first is child number `before` (each probed key compared where it
    /// lies in the bytes, without making a string of it).
    private static func search(_ packed: PackedChildren, _ key: String, before: Int) -> Slot {
        var key = key
        return key.withUTF8 { probe in
            var low = 0
            var high = packed.count
            while low < high {
                let mid = (low + high) / 2
                let c = packed.compareKey(at: mid, with: probe)
                if c == 0 { return Slot(position: before + mid, found: true, node: packed.node(at: mid)) }
                if c < 0 { low = mid + 1 } else { high = mid }
            }
            return Slot(position: before + low, found: false, node: nil)
        }
    }

    /// `compareKeys(storedKey, key)`, where `stored` and `probe` are the integer values of `storedKey` and `key`
    /// (or `Entry.notInteger`).
    @inline(__always)
    private static func compare(_ storedKey: String, _ stored: Int64, _ key: String, _ probe: Int64) -> Int {
        if stored != Entry.notInteger {
            if probe == Entry.notInteger { return -1 }  // integer-like keys sort first
            if stored != probe { return stored < probe ? -1 : 1 }
            return compareKeys(storedKey, key)  // same value: length, then code units
        }
        if probe != Entry.notInteger { return 1 }
        return compareUTF16(storedKey, key)
    }

    /// The child at a found slot.
    func element(at slot: Slot) -> Element { self[slot.position] }

    /// The node at a found slot.
    func node(at slot: Slot) -> Node { slot.node ?? self[slot.position].node }

    /// A copy with the child at `slot` replaced (found) or inserted there (not found).
    func setting(_ element: Element, at slot: Slot) -> NodeChildren {
        let entry = Entry(key: element.key, node: element.node)
        switch storage {
        case .packed:
            // A changed list is unpacked; its next load packs it again.
            return NodeChildren(storage: .flat(entries())).setting(element, at: slot)
        case .flat(var list):
            if slot.found { list[slot.position] = entry } else { list.insert(entry, at: slot.position) }
            if list.count <= NodeChildren.flatLimit { return NodeChildren(storage: .flat(list)) }
            guard slot.position == NodeChildren.flatLimit else { return NodeChildren(sortedEntries: list) }
            // Appended: the full array becomes the first leaf, as in `inserting`.
            let leaves: [Leaf] = [
                .entries(Array(list[..<NodeChildren.flatLimit])), .entries(Array(list[NodeChildren.flatLimit...])),
            ]
            return NodeChildren(storage: .tree(Branch(leaves: leaves)))
        case .tree(let root):
            if slot.found { return NodeChildren(storage: .tree(NodeChildren.replacing(entry, at: slot.position, in: root))) }
            let appending = slot.position == root.count
            let (left, right) = NodeChildren.inserting(entry, at: slot.position, in: root, appending: appending)
            guard let right else { return NodeChildren(storage: .tree(left)) }
            return NodeChildren(storage: .tree(Branch(branches: [left, right])))
        }
    }

    /// `branch` with the entry at `position` replaced by `entry` (same key: no first key changes).
    private static func replacing(_ entry: Entry, at position: Int, in branch: Branch) -> Branch {
        let kid = branch.kid(holding: position)
        let inner = position - branch.offsets[kid]
        switch branch.kids {
        case .leaves(var leaves):
            var list = leaves[kid].entries
            list[inner] = entry
            leaves[kid] = .entries(list)
            return Branch(kids: .leaves(leaves), firsts: branch.firsts, offsets: branch.offsets, count: branch.count)
        case .branches(var branches):
            branches[kid] = replacing(entry, at: inner, in: branches[kid])
            return Branch(
                kids: .branches(branches), firsts: branch.firsts, offsets: branch.offsets, count: branch.count)
        }
    }

    /// `branch` with `entry` inserted at `position`, and the new right sibling when it had to split.
    ///
    /// A full node splits in halves, except when `appending` (inserting after every child, as pushes do): then the
    /// left part stays full and the new entry starts the right one, so lists grown at their end fill their nodes.
    private static func inserting(_ entry: Entry, at position: Int, in branch: Branch, appending: Bool) -> (
        Branch, Branch?
    ) {
        let kid = branch.kid(insertingAt: position)
        let inner = position - branch.offsets[kid]
        var firsts = branch.firsts
        var offsets = branch.offsets
        for i in (kid + 1)..<offsets.count { offsets[i] += 1 }
        let count = branch.count + 1
        switch branch.kids {
        case .leaves(var leaves):
            var full = leaves[kid].entries
            full.insert(entry, at: inner)
            leaves[kid] = .entries(full)
            if inner == 0 { firsts[kid] = FirstKey(entry) }
            if full.count > flatLimit {
                let cut = appending ? flatLimit : full.count / 2
                leaves[kid] = .entries(Array(full[..<cut]))
                leaves.insert(.entries(Array(full[cut...])), at: kid + 1)
                firsts.insert(FirstKey(full[cut]), at: kid + 1)
                offsets.insert(offsets[kid] + cut, at: kid + 1)
            }
            return split(Branch(kids: .leaves(leaves), firsts: firsts, offsets: offsets, count: count), appending)
        case .branches(var branches):
            let (left, right) = inserting(entry, at: inner, in: branches[kid], appending: appending)
            branches[kid] = left
            if inner == 0 { firsts[kid] = left.firsts[0] }
            if let right {
                branches.insert(right, at: kid + 1)
                firsts.insert(right.firsts[0], at: kid + 1)
                offsets.insert(offsets[kid] + left.count, at: kid + 1)
            }
            return split(Branch(kids: .branches(branches), firsts: firsts, offsets: offsets, count: count), appending)
        }
    }

    /// `branch` itself when it has room, else its two halves (the left one full when `appending`).
    private static func split(_ branch: Branch, _ appending: Bool) -> (Branch, Branch?) {
        guard branch.kidCount > branchLimit else { return (branch, nil) }
        let cut = appending ? branchLimit : branch.kidCount / 2
        switch branch.kids {
        case .leaves(let leaves):
            return (Branch(leaves: Array(leaves[..<cut])), Branch(leaves: Array(leaves[cut...])))
        case .branches(let branches):
            return (Branch(branches: Array(branches[..<cut])), Branch(branches: Array(branches[cut...])))
        }
    }

    /// A copy without the child at the found `slot`.
    func removing(at slot: Slot) -> NodeChildren {
        switch storage {
        case .packed:
            return NodeChildren(storage: .flat(entries())).removing(at: slot)
        case .flat(var list):
            list.remove(at: slot.position)
            return NodeChildren(storage: .flat(list))
        case .tree(let root):
            guard var rest = NodeChildren.removing(at: slot.position, in: root) else { return .none }
            if rest.count <= NodeChildren.flatLimit / 2 {
                return NodeChildren(storage: .flat(Array(NodeChildren(storage: .tree(rest)).entries())))
            }
            // A root left with a single branch gives way to it.
            while rest.kidCount == 1, case .branches(let only) = rest.kids { rest = only[0] }
            if rest.kidCount == 1, case .leaves(let only) = rest.kids {
                switch only[0] {
                case .entries(let list): return NodeChildren(storage: .flat(list))
                case .packed(let packed): return NodeChildren(storage: .packed(packed))
                }
            }
            return NodeChildren(storage: .tree(rest))
        }
    }

    /// `branch` without the entry at `position`; nil when nothing is left under it. Emptied kids are dropped; nodes
    /// are not merged with their neighbours, so a list that shrinks keeps its depth until it is small enough to be
    /// flat again.
    private static func removing(at position: Int, in branch: Branch) -> Branch? {
        guard branch.count > 1 else { return nil }
        let kid = branch.kid(holding: position)
        let inner = position - branch.offsets[kid]
        var firsts = branch.firsts
        var offsets = branch.offsets
        for i in (kid + 1)..<offsets.count { offsets[i] -= 1 }
        let count = branch.count - 1
        switch branch.kids {
        case .leaves(var leaves):
            var list = leaves[kid].entries
            list.remove(at: inner)
            if list.isEmpty {
                leaves.remove(at: kid)
                firsts.remove(at: kid)
                offsets.remove(at: kid)
            } else {
                leaves[kid] = .entries(list)
                if inner == 0 { firsts[kid] = FirstKey(list[0]) }
            }
            return Branch(kids: .leaves(leaves), firsts: firsts, offsets: offsets, count: count)
        case .branches(var branches):
            if let rest = removing(at: inner, in: branches[kid]) {
                branches[kid] = rest
                if inner == 0 { firsts[kid] = rest.firsts[0] }
            } else {
                branches.remove(at: kid)
                firsts.remove(at: kid)
                offsets.remove(at: kid)
            }
            return Branch(kids: .branches(branches), firsts: firsts, offsets: offsets, count: count)
        }
    }

    /// The entries in order.
    private func entries() -> [Entry] {
        switch storage {
        case .flat(let list): return list
        case .packed(let packed):
            return Leaf.packed(packed).entries
        case .tree(let root):
            var result: [Entry] = []
            result.reserveCapacity(root.count)
            func collect(_ branch: Branch) {
                switch branch.kids {
                case .leaves(let leaves): for leaf in leaves { result.append(contentsOf: leaf.entries) }
                case .branches(let branches): for branch in branches { collect(branch) }
                }
            }
            collect(root)
            return result
        }
    }

    /// The number of leaves (1 when flat); for tests.
    var chunkCount: Int {
        switch storage {
        case .flat, .packed: 1
        case .tree(let root): root.leafCount
        }
    }

    /// The levels of branches above the leaves (0 when flat); for tests.
    var depth: Int {
        switch storage {
        case .flat, .packed: return 0
        case .tree(var branch):
            var levels = 1
            while case .branches(let branches) = branch.kids {
                branch = branches[0]
                levels += 1
            }
            return levels
        }
    }
}
