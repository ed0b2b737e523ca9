// NodeChildren -- the sorted children of an internal node, flat when small and chunked when large.
//
// Children are kept sorted by `compareKeys`. Up to `flatLimit` children live in one contiguous array. Larger
// lists are cut into chunks, each a contiguous sorted array of at most `maxChunk` children, with a directory of
// the chunks' first keys and starting offsets — a two-level B-tree. Lookups binary-search the directory, then
// the chunk: O(log n). One insert, replace or remove copies a single chunk plus the directory, O(maxChunk +
// n / chunk size) reference copies instead of O(n): for 200 000 children about 1 300 instead of 200 000. Chunks
// start at `buildChunk` children, split in two when they exceed `maxChunk`, and disappear when emptied.

/// The children of a node in Firebase key order, as a random-access collection of `(key, node)` pairs.
public struct NodeChildren: RandomAccessCollection, Sendable {
    public typealias Element = (key: String, node: Node)
    public typealias Index = Int

    /// Lists up to this size stay flat.
    static let flatLimit = 256
    /// The chunk size used when a large list is built or a chunk splits.
    static let buildChunk = 128
    /// A chunk that grows beyond this splits.
    static let maxChunk = 256

    private enum Storage: Sendable {
        case flat([Element])
        case chunked(Chunks)
    }

    private struct Chunks: Sendable {
        var chunks: [[Element]]
        /// The first key of each chunk.
        var firstKeys: [String]
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
        if list.count <= NodeChildren.flatLimit {
            storage = .flat(list)
            return
        }
        var chunks: [[Element]] = []
        chunks.reserveCapacity(list.count / NodeChildren.buildChunk + 1)
        var start = 0
        while start < list.count {
            let end = Swift.min(start + NodeChildren.buildChunk, list.count)
            chunks.append(Array(list[start..<end]))
            start = end
        }
        storage = .chunked(NodeChildren.directory(for: chunks))
    }

    private static func directory(for chunks: [[Element]]) -> Chunks {
        var offsets: [Int] = []
        offsets.reserveCapacity(chunks.count)
        var total = 0
        for chunk in chunks {
            offsets.append(total)
            total += chunk.count
        }
        return Chunks(chunks: chunks, firstKeys: chunks.map { $0[0].key }, offsets: offsets, count: total)
    }

    public var startIndex: Int { 0 }

    public var endIndex: Int {
        switch storage {
        case .flat(let list): list.count
        case .chunked(let c): c.count
        }
    }

    public subscript(position: Int) -> Element {
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
        var current: [Element]
        let rest: [[Element]]
        var chunk = 0
        var position = 0

        init(current: [Element], rest: [[Element]]) {
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
            return current[position]
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
        switch storage {
        case .flat(let list):
            let (position, found) = NodeChildren.search(list, key)
            return Slot(chunk: 0, position: position, found: found)
        case .chunked(let c):
            // The last chunk whose first key is <= key (chunk 0 when key precedes everything).
            var low = 0
            var high = c.firstKeys.count
            while high - low > 1 {
                let mid = (low + high) / 2
                if compareKeys(c.firstKeys[mid], key) <= 0 { low = mid } else { high = mid }
            }
            let (position, found) = NodeChildren.search(c.chunks[low], key)
            return Slot(chunk: low, position: position, found: found)
        }
    }

    private static func search(_ list: [Element], _ key: String) -> (Int, Bool) {
        var low = 0
        var high = list.count
        while low < high {
            let mid = (low + high) / 2
            let c = compareKeys(list[mid].key, key)
            if c == 0 { return (mid, true) }
            if c < 0 { low = mid + 1 } else { high = mid }
        }
        return (low, false)
    }

    /// The child at a found slot.
    func element(at slot: Slot) -> Element {
        switch storage {
        case .flat(let list): list[slot.position]
        case .chunked(let c): c.chunks[slot.chunk][slot.position]
        }
    }

    /// A copy with the child at `slot` replaced (found) or inserted there (not found).
    func setting(_ element: Element, at slot: Slot) -> NodeChildren {
        switch storage {
        case .flat(var list):
            if slot.found { list[slot.position] = element } else { list.insert(element, at: slot.position) }
            return list.count <= NodeChildren.flatLimit
                ? NodeChildren(storage: .flat(list)) : NodeChildren(sorted: list)
        case .chunked(var c):
            if slot.found {
                c.chunks[slot.chunk][slot.position] = element
                if slot.position == 0 { c.firstKeys[slot.chunk] = element.key }
                return NodeChildren(storage: .chunked(c))
            }
            c.chunks[slot.chunk].insert(element, at: slot.position)
            if slot.position == 0 { c.firstKeys[slot.chunk] = element.key }
            c.count += 1
            for i in (slot.chunk + 1)..<c.offsets.count { c.offsets[i] += 1 }
            if c.chunks[slot.chunk].count > NodeChildren.maxChunk {
                let full = c.chunks[slot.chunk]
                let half = full.count / 2
                c.chunks[slot.chunk] = Array(full[..<half])
                c.chunks.insert(Array(full[half...]), at: slot.chunk + 1)
                c.firstKeys.insert(full[half].key, at: slot.chunk + 1)
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
                c.firstKeys.remove(at: slot.chunk)
                c.offsets.remove(at: slot.chunk)
            } else if slot.position == 0 {
                c.firstKeys[slot.chunk] = c.chunks[slot.chunk][0].key
            }
            if c.count <= NodeChildren.buildChunk { return NodeChildren(storage: .flat(c.chunks.flatMap { $0 })) }
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
