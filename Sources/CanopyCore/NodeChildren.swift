// NodeChildren -- the sorted children of an internal node, flat when small and chunked when large.
//
// Children are kept sorted by `compareKeys`. Up to `flatLimit` children live in one contiguous array. Larger
// lists are cut into chunks, each a contiguous sorted array, with a directory of the chunks' first entries and
// starting offsets — a two-level B-tree. Lookups binary-search the directory, then the chunk: O(log n). One
// insert, replace or remove copies a single chunk plus the directory. Both cost about n / chunk size + chunk size
// reference copies, least when chunks hold about √n children: lists are built in chunks of `chunkTarget(n)`
// (√n, kept within 32...1 024), and a chunk splits once it holds more than twice the target. The directory holds
// the chunks' first keys, not their entries, so copying it retains no node. For 1 000 children a write copies
// about 100 references instead of 2 000, for 200 000 about 1 400 instead of 400 000, for 1 000 000 about 3 000.
// (Chunks of at most 128, as before, cost 5 000 at 200 000 children and 16 000 at 1 000 000.)
//
// Entries are a struct (key, node, and the key's integer value cached for ordering) rather than the public
// `(key, node)` tuple: an array of tuples is copied element by element through the runtime's generic tuple
// witnesses, a struct through its own compiled copy; and a search compares cached integers instead of parsing
// each probed key again.

/// The children of a node in Firebase key order, as a random-access collection of `(key, node)` pairs.
public struct NodeChildren: RandomAccessCollection, Sendable {
    public typealias Element = (key: String, node: Node)
    public typealias Index = Int

    /// Lists up to this size stay flat.
    static let flatLimit = 64

    /// The chunk size for a list of `count` children: about √count, within 32...1 024.
    static func chunkTarget(_ count: Int) -> Int {
        guard count > 32 * 32 else { return 32 }
        var root = Int(Double(count).squareRoot())
        while root * root > count { root -= 1 }
        while (root + 1) * (root + 1) <= count { root += 1 }
        return Swift.min(root, 1_024)
    }

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
            self.integer = Key.integerValue(key).map(Int64.init) ?? Entry.notInteger
        }
    }

    /// A chunk's first key, with its cached integer value (what a directory search compares).
    struct FirstKey: Sendable {
        let key: String
        let integer: Int64

        init(_ entry: Entry) {
            key = entry.key
            integer = entry.integer
        }
    }

    private enum Storage: Sendable {
        case flat([Entry])
        indirect case chunked(Chunks)
    }

    private struct Chunks: Sendable {
        var chunks: [[Entry]]
        /// The first key of each chunk, with the cached integer value searches compare.
        var firsts: [FirstKey]
        /// The number of children before each chunk.
        var offsets: [Int]
        var count: Int
    }

    private let storage: Storage

    /// The empty list.
    static let none = NodeChildren(storage: .flat([]))

    private init(storage: Storage) { self.storage = storage }

    /// Wraps children that are already sorted by `compareKeys`, distinct and non-empty (not checked).
    init(sorted list: [Element]) {
        self.init(sortedEntries: list.map { Entry(key: $0.key, node: $0.node) })
    }

    private init(sortedEntries list: [Entry]) {
        if list.count <= NodeChildren.flatLimit {
            storage = .flat(list)
            return
        }
        let size = NodeChildren.chunkTarget(list.count)
        var chunks: [[Entry]] = []
        chunks.reserveCapacity(list.count / size + 1)
        var start = 0
        while start < list.count {
            let end = Swift.min(start + size, list.count)
            chunks.append(Array(list[start..<end]))
            start = end
        }
        storage = .chunked(NodeChildren.directory(for: chunks))
    }

    private static func directory(for chunks: [[Entry]]) -> Chunks {
        var offsets: [Int] = []
        offsets.reserveCapacity(chunks.count)
        var total = 0
        for chunk in chunks {
            offsets.append(total)
            total += chunk.count
        }
        return Chunks(chunks: chunks, firsts: chunks.map { FirstKey($0[0]) }, offsets: offsets, count: total)
    }

    public var startIndex: Int { 0 }

    public var endIndex: Int {
        switch storage {
        case .flat(let list): list.count
        case .chunked(let c): c.count
        }
    }

    public subscript(position: Int) -> Element {
        let entry = self.entry(at: position)
        return (entry.key, entry.node)
    }

    private func entry(at position: Int) -> Entry {
        switch storage {
        case .flat(let list):
            return list[position]
        case .chunked(let c):
            precondition(position >= 0 && position < c.count, "NodeChildren index out of range")
            // The last chunk whose offset is <= position.
            var low = 0
            var high = c.offsets.count
            while high - low > 1 {
                let mid = (low + high) / 2
                if c.offsets[mid] <= position { low = mid } else { high = mid }
            }
            return c.chunks[low][position - c.offsets[low]]
        }
    }

    public func makeIterator() -> Iterator {
        switch storage {
        case .flat(let list): Iterator(current: list, rest: [])
        case .chunked(let c): Iterator(current: c.chunks[0], rest: c.chunks)
        }
    }

    /// Walks the chunks in order without per-element searches (and without allocating for flat lists).
    public struct Iterator: IteratorProtocol {
        var current: [Entry]
        let rest: [[Entry]]
        var chunk = 0
        var position = 0

        init(current: [Entry], rest: [[Entry]]) {
            self.current = current
            self.rest = rest
        }

        public mutating func next() -> Element? {
            while position == current.count {
                chunk += 1
                guard chunk < rest.count else { return nil }
                current = rest[chunk]
                position = 0
            }
            defer { position += 1 }
            let entry = current[position]
            return (entry.key, entry.node)
        }
    }

    /// Where `key` is, or would be inserted: the chunk (0 when flat), the position inside it, and whether found.
    struct Slot {
        var chunk: Int
        var position: Int
        var found: Bool
    }

    /// Finds `key` by binary search (directory, then chunk).
    func slot(of key: String) -> Slot {
        let probe = Key.integerValue(key).map(Int64.init) ?? Entry.notInteger
        switch storage {
        case .flat(let list):
            let (position, found) = NodeChildren.search(list, key, probe)
            return Slot(chunk: 0, position: position, found: found)
        case .chunked(let c):
            // The last chunk whose first key is <= key (chunk 0 when key precedes everything).
            let low = c.firsts.withUnsafeBufferPointer { firsts in
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
            let (position, found) = NodeChildren.search(c.chunks[low], key, probe)
            return Slot(chunk: low, position: position, found: found)
        }
    }

    /// Binary search of one sorted list; `probe` is `key`'s integer value (or `Entry.notInteger`).
    private static func search(_ list: [Entry], _ key: String, _ probe: Int64) -> (Int, Bool) {
        // Fields are read in place: copying an `Entry` out of the array would retain and release its key and node
        // at every probe.
        return list.withUnsafeBufferPointer { entries in
            var low = 0
            var high = entries.count
            while low < high {
                let mid = (low + high) / 2
                let c = compare(entries[mid].key, entries[mid].integer, key, probe)
                if c == 0 { return (mid, true) }
                if c < 0 { low = mid + 1 } else { high = mid }
            }
            return (low, false)
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
    func element(at slot: Slot) -> Element {
        let entry: Entry =
            switch storage {
            case .flat(let list): list[slot.position]
            case .chunked(let c): c.chunks[slot.chunk][slot.position]
            }
        return (entry.key, entry.node)
    }

    /// The node at a found slot.
    func node(at slot: Slot) -> Node {
        switch storage {
        case .flat(let list): list[slot.position].node
        case .chunked(let c): c.chunks[slot.chunk][slot.position].node
        }
    }

    /// A copy with the child at `slot` replaced (found) or inserted there (not found).
    func setting(_ element: Element, at slot: Slot) -> NodeChildren {
        let element = Entry(key: element.key, node: element.node)
        switch storage {
        case .flat(var list):
            if slot.found { list[slot.position] = element } else { list.insert(element, at: slot.position) }
            return list.count <= NodeChildren.flatLimit
                ? NodeChildren(storage: .flat(list)) : NodeChildren(sortedEntries: list)
        case .chunked(var c):
            if slot.found {
                c.chunks[slot.chunk][slot.position] = element
                if slot.position == 0 { c.firsts[slot.chunk] = FirstKey(element) }
                return NodeChildren(storage: .chunked(c))
            }
            c.chunks[slot.chunk].insert(element, at: slot.position)
            if slot.position == 0 { c.firsts[slot.chunk] = FirstKey(element) }
            c.count += 1
            for i in (slot.chunk + 1)..<c.offsets.count { c.offsets[i] += 1 }
            if c.chunks[slot.chunk].count > 2 * NodeChildren.chunkTarget(c.count) {
                let full = c.chunks[slot.chunk]
                let half = full.count / 2
                c.chunks[slot.chunk] = Array(full[..<half])
                c.chunks.insert(Array(full[half...]), at: slot.chunk + 1)
                c.firsts.insert(FirstKey(full[half]), at: slot.chunk + 1)
                c.offsets.insert(c.offsets[slot.chunk] + half, at: slot.chunk + 1)
            }
            return NodeChildren(storage: .chunked(c))
        }
    }

    /// A copy without the child at the found `slot`.
    func removing(at slot: Slot) -> NodeChildren {
        switch storage {
        case .flat(var list):
            list.remove(at: slot.position)
            return NodeChildren(storage: .flat(list))
        case .chunked(var c):
            c.chunks[slot.chunk].remove(at: slot.position)
            c.count -= 1
            for i in (slot.chunk + 1)..<c.offsets.count { c.offsets[i] -= 1 }
            if c.chunks[slot.chunk].isEmpty {
                c.chunks.remove(at: slot.chunk)
                c.firsts.remove(at: slot.chunk)
                c.offsets.remove(at: slot.chunk)
            } else if slot.position == 0 {
                c.firsts[slot.chunk] = FirstKey(c.chunks[slot.chunk][0])
            }
            if c.count <= NodeChildren.flatLimit / 2 {
                return NodeChildren(storage: .flat(c.chunks.flatMap { $0 }))
            }
            return NodeChildren(storage: .chunked(c))
        }
    }

    /// The number of chunks (1 when flat); for tests.
    var chunkCount: Int {
        switch storage {
        case .flat: 1
        case .chunked(let c): c.chunks.count
        }
    }
}
