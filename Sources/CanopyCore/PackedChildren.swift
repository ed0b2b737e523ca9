// PackedChildren -- a short child list whose leaves are packed in one byte array, other children by reference.
//
// WHY
//   Most of a loaded tree is records: objects whose children are leaves (a title, a time, a flag), sometimes next to
//   a nested object or two. As nodes, each leaf cost a `Node` (a 64-byte heap block), a 32-byte `Entry` in its
//   parent's array and, for a string longer than 15 bytes, the string's own allocation: about 3.5 × its row on
//   disk (Architecture.md, "Loading a namespace"). Packed, the leaves of one object are one allocation holding
//   what the rows hold, without paths.
//
// LAYOUT (little-endian)
//   count × u32   offset of each entry from the start of the array
//   per entry     u16 key length, the key's UTF-8 bytes, u8 tag, payload:
//                 tag 0 false, 1 true (no payload), 2 Int64 (8 bytes), 3 Double (8 bytes, its bit pattern),
//                 4 string (u32 length, UTF-8 bytes), 5 a child kept as a node (u32 index into `nodes`)
//   Entries are in Firebase key order, as in every `NodeChildren`. A leaf with a priority, and every internal
//   child, is kept as a node (tag 5), so it keeps its identity.
//
// WHAT IT COSTS
//   A packed leaf read from the list is a new leaf `Node` each time: no identity to compare, so identity shortcuts
//   (`===`) fall back to comparing values, which for a leaf is cheap. Changing a packed list unpacks it (see
//   `NodeChildren.setting(_:at:)`). Lists of 1 to `NodeChildren.flatLimit` children with at least one plain leaf
//   (no priority) are packed.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child list packed as described in the file comment. Immutable.
///
/// Two references and nothing else: `NodeChildren` holds one of these in its storage enum, and every `Node` holds a
/// `NodeChildren`, so a third word would make every node of every tree a 80-byte heap block instead of 64.
struct PackedChildren: Sendable {
    private let bytes: [UInt8]
    /// The children kept as nodes (tag 5), in key order.
    private let nodes: [Node]

    /// The number of children (at least one): the first entry starts right after the offsets.
    var count: Int {
        bytes.withUnsafeBufferPointer { Self.offset(of: 0, in: $0) / 4 }
    }

    private enum Tag: UInt8 {
        case falseValue = 0, trueValue, int, double, string, node
    }

    /// Packs `children` (sorted by `compareKeys`, distinct keys, none empty); nil unless there are 1 to `limit` of
    /// them and one at least is a leaf without a priority.
    init?(sorted children: [(key: String, node: Node)], limit: Int) {
        guard !children.isEmpty, children.count <= limit else { return nil }
        var size = 4 * children.count
        var plainLeaves = 0
        for (key, node) in children {
            size += 3 + key.utf8.count
            guard node.priorityValue == nil, let value = node.leafValue else {
                size += 4
                continue
            }
            plainLeaves += 1
            switch value {
            case .int, .double: size += 8
            case .string(let text): size += 4 + text.utf8.count
            default: break
            }
        }
        guard plainLeaves > 0, size <= Int(UInt32.max) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        bytes.append(contentsOf: repeatElement(0, count: 4 * children.count))
        var nodes: [Node] = []
        if plainLeaves < children.count { nodes.reserveCapacity(children.count - plainLeaves) }
        for (index, (key, node)) in children.enumerated() {
            Self.store(UInt32(bytes.count), at: 4 * index, in: &bytes)
            Self.append(UInt64(key.utf8.count), bytes: 2, to: &bytes)
            bytes.append(contentsOf: key.utf8)
            switch node.priorityValue == nil ? node.leafValue : nil {
            case .bool(let flag)?: bytes.append(flag ? Tag.trueValue.rawValue : Tag.falseValue.rawValue)
            case .int(let number)?:
                bytes.append(Tag.int.rawValue)
                Self.append(UInt64(bitPattern: number), bytes: 8, to: &bytes)
            case .double(let number)?:
                bytes.append(Tag.double.rawValue)
                Self.append(number.bitPattern, bytes: 8, to: &bytes)
            case .string(let text)?:
                bytes.append(Tag.string.rawValue)
                Self.append(UInt64(text.utf8.count), bytes: 4, to: &bytes)
                bytes.append(contentsOf: text.utf8)
            default:
                bytes.append(Tag.node.rawValue)
                Self.append(UInt64(nodes.count), bytes: 4, to: &bytes)
                nodes.append(node)
            }
        }
        self.bytes = bytes
        self.nodes = nodes
    }

    /// The key of child `index`.
    func key(at index: Int) -> String {
        withKeyBytes(at: index) { String(decoding: $0, as: UTF8.self) }
    }

    /// `compareKeys` of the key at `index` and the key whose UTF-8 bytes are `key`, read in place.
    func compareKey(at index: Int, with key: UnsafeBufferPointer<UInt8>) -> Int {
        withKeyBytes(at: index) { compareKeyBytes($0, key) }
    }

    /// Calls `body` with the UTF-8 bytes of child `index`'s key, where they lie.
    private func withKeyBytes<R>(at index: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        bytes.withUnsafeBufferPointer { raw in
            let start = Self.offset(of: index, in: raw)
            let length = Self.load(raw, at: start, bytes: 2)
            return body(UnsafeBufferPointer(rebasing: raw[(start + 2)..<(start + 2 + length)]))
        }
    }

    /// Child `index` with its key (see `node(at:)`).
    func element(at index: Int) -> (key: String, node: Node) {
        (key(at: index), node(at: index))
    }

    /// Child `index`: its stored node, or a packed leaf as a node of its own (a new instance on every call).
    func node(at index: Int) -> Node {
        switch entry(at: index) {
        case .leaf(let value): Node(validatedLeaf: value, priority: nil, children: .none)
        case .node(let node): node
        }
    }

    private enum Child {
        case leaf(JSONValue)
        case node(Node)
    }

    private func entry(at index: Int) -> Child {
        bytes.withUnsafeBufferPointer { raw in
            let start = Self.offset(of: index, in: raw)
            let tagAt = start + 2 + Self.load(raw, at: start, bytes: 2)
            switch Tag(rawValue: raw[tagAt]) {
            case .falseValue: return .leaf(.bool(false))
            case .trueValue: return .leaf(.bool(true))
            case .int: return .leaf(.int(Int64(bitPattern: Self.bits(raw, at: tagAt + 1, bytes: 8))))
            case .double: return .leaf(.double(Double(bitPattern: Self.bits(raw, at: tagAt + 1, bytes: 8))))
            case .string:
                let length = Self.load(raw, at: tagAt + 1, bytes: 4)
                let text = UnsafeBufferPointer(rebasing: raw[(tagAt + 5)..<(tagAt + 5 + length)])
                return .leaf(.string(String(decoding: text, as: UTF8.self)))
            case .node: return .node(nodes[Self.load(raw, at: tagAt + 1, bytes: 4)])
            case nil: preconditionFailure("damaged packed children")
            }
        }
    }

    /// Appends the children as the members of a JSON object, `"key":value` separated by commas, exactly as
    /// `Node.writeJSON(export:into:)` writes them, but without making a node or a string per packed leaf.
    func writeJSONMembers(export: Bool, into out: inout [UInt8]) {
        bytes.withUnsafeBufferPointer { raw in
            for index in 0..<count {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                let start = Self.offset(of: index, in: raw)
                let keyLength = Self.load(raw, at: start, bytes: 2)
                let tagAt = start + 2 + keyLength
                JSONValue.writeQuoted(utf8: UnsafeBufferPointer(rebasing: raw[(start + 2)..<tagAt]), into: &out)
                out.append(UInt8(ascii: ":"))
                switch Tag(rawValue: raw[tagAt]) {
                case .string:
                    let length = Self.load(raw, at: tagAt + 1, bytes: 4)
                    let text = UnsafeBufferPointer(rebasing: raw[(tagAt + 5)..<(tagAt + 5 + length)])
                    JSONValue.writeQuoted(utf8: text, into: &out)
                case .falseValue: out.append(contentsOf: "false".utf8)
                case .trueValue: out.append(contentsOf: "true".utf8)
                case .int:
                    let number = Int64(bitPattern: Self.bits(raw, at: tagAt + 1, bytes: 8))
                    JSONNumberFormat.appendInteger(number, into: &out)
                case .double:
                    JSONNumberFormat.write(Double(bitPattern: Self.bits(raw, at: tagAt + 1, bytes: 8)), into: &out)
                case .node: nodes[Self.load(raw, at: tagAt + 1, bytes: 4)].writeJSON(export: export, into: &out)
                case nil: preconditionFailure("damaged packed children")
                }
            }
        }
    }

    /// Whether this list and `other` hold the same data, when their bytes can tell: packed alike byte for byte,
    /// they hold the same data exactly when each child kept as a node holds the same data as its counterpart
    /// (`Node.hasSameData`). Bytes that differ prove nothing (`1` and `1.0` are packed apart, yet hash alike): nil,
    /// and the caller compares child by child. A publish compares thousands of stored item copies with the ones it
    /// places, both packed from the same JSON: one `memcmp` each instead of a node made per leaf on both sides.
    func sameData(as other: PackedChildren) -> Bool? {
        guard bytes.count == other.bytes.count, nodes.count == other.nodes.count else { return nil }
        let alike = bytes.withUnsafeBytes { mine in
            other.bytes.withUnsafeBytes { theirs in
                memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0
            }
        }
        guard alike else { return nil }
        for (mine, theirs) in zip(nodes, other.nodes) where !mine.hasSameData(as: theirs) { return false }
        return true
    }

    /// Whether child `index` is named `key` (byte for byte).
    func hasKey(_ key: String, at index: Int) -> Bool {
        var key = key
        return key.withUTF8 { probe in
            withKeyBytes(at: index) { $0.count == probe.count && $0.elementsEqual(probe) }
        }
    }

    /// Whether this list holds exactly `children`, in order: the same keys; for a packed leaf, a leaf without a
    /// priority and the same value bit for bit (`JSONValue.identical`: `1` and `1.0` differ); for a child kept as
    /// a node, that same instance.
    func holdsExactly(_ children: ArraySlice<(key: String, node: Node)>) -> Bool {
        guard children.count == count else { return false }
        for (index, child) in children.enumerated() {
            guard hasKey(child.key, at: index) else { return false }
            switch entry(at: index) {
            case .node(let node):
                guard node === child.node else { return false }
            case .leaf(let value):
                guard child.node.priorityValue == nil, JSONValue.identical(child.node.leafValue, value) else {
                    return false
                }
            }
        }
        return true
    }

    private static func offset(of index: Int, in raw: UnsafeBufferPointer<UInt8>) -> Int {
        load(raw, at: 4 * index, bytes: 4)
    }

    /// A length, an offset or an index (at most 4 bytes).
    private static func load(_ raw: UnsafeBufferPointer<UInt8>, at start: Int, bytes: Int) -> Int {
        Int(bits(raw, at: start, bytes: bytes))
    }

    private static func bits(_ raw: UnsafeBufferPointer<UInt8>, at start: Int, bytes: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in stride(from: bytes - 1, through: 0, by: -1) { value = value << 8 | UInt64(raw[start + i]) }
        return value
    }

    private static func store(_ value: UInt32, at start: Int, in bytes: inout [UInt8]) {
        for i in 0..<4 { bytes[start + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
    }

    private static func append(_ value: UInt64, bytes count: Int, to bytes: inout [UInt8]) {
        for i in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }
}
