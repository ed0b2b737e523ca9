// Node+JSON -- converting between JSON values and nodes, in plain and export form.
//
// Input (`from(json:at:)`) accepts both forms (Protocol.md#Arrays, Protocol.md#Export-format):
//   - `null`, `{}`, `[]` and objects whose members are all empty → the empty node;
//   - arrays → children "0", "1", … (null elements dropped);
//   - `{".value": v, ".priority": p}` → leaf v with priority p; `".priority"` next to children → the node's
//     priority; any other key beginning with `.` is refused, as is `.value` beside real children;
//   - `{".sv": …}` is refused: callers resolve server values first (`ServerValues.resolve`).
// Limits: keys per `Key.isValid`; at most 32 segments from the root to any key, metadata keys included (the
// clients count them the same way); strings ≤ 10 MB; numbers finite. Recursion is bounded by the depth limit.
//
// Output (`json(export:)`): plain form drops priorities and renders an internal node as an array when every key
// is a canonical non-negative integer (`0` or `[1-9][0-9]*`) and the largest key is below twice the child count
// (missing indices become null); export form keeps `.priority`/`.value` and never makes arrays. Object members
// come out in Firebase key order.

extension Node {
    /// The largest string leaf or priority, in UTF-8 bytes (10 MB).
    public static let maxStringBytes = 10 * 1024 * 1024

    /// Builds a node from a JSON value written at `path`.
    ///
    /// - Parameters:
    ///   - json: The written value, plain or export form, with server values already resolved.
    ///   - path: Where the value will be stored; used for the depth limit and error locations. When it ends in
    ///     `.priority`, `json` must be a valid priority (string, finite number or null) and the result is that
    ///     priority as a leaf (or empty), ready for `setting(_:at:)`.
    /// - Returns: The node; `.empty` for null-like input.
    /// - Throws: `DataError` naming the offending absolute location.
    ///   - stored: The node stored at `path` now, if the caller has it. Wherever the written value holds exactly
    ///     the data stored at the same place (the same primitives, bit for bit, byte for byte; the same
    ///     priorities), the stored instance is returned instead of a new one: rewriting a large region keeps the
    ///     caches keyed by node identity (parsed publish items, wire hashes, the publish memo) and allocates
    ///     nothing for what did not change. `1` and `1.0` are not the same here, so the written spelling is kept.
    public static func from(json: JSONValue, at path: Path = .root, reusing stored: Node = .empty)
        throws(DataError) -> Node
    {
        if path.isPriorityPath {
            let p = try validPriority(json, at: path)
            return p.map { Node(validatedLeaf: $0, priority: nil, entries: []) } ?? .empty
        }
        guard path.count <= Path.maxDepth else { throw DataError(.tooDeep, at: path) }
        var location = path.segments
        return try build(json, &location, stored)
    }

    private static func build(_ json: JSONValue, _ location: inout [String], _ stored: Node) throws(DataError) -> Node {
        switch json {
        case .null:
            return .empty
        case .bool, .int, .double, .string:
            let leaf = try validLeaf(json, location)
            if stored.priorityValue == nil, JSONValue.identical(leaf, stored.leafValue) { return stored }
            return Node(validatedLeaf: leaf, priority: nil, entries: [])
        case .array(let items):
            var list: [(key: String, node: Node)] = []
            list.reserveCapacity(items.count)
            var storedChildren = StoredChildren(stored)
            for (i, item) in items.enumerated() {
                let key = String(i)
                let child = try buildChild(key, item, &location, storedChildren.child(key))
                if !child.isEmpty { list.append((key, child)) }
            }
            // Indices ascend numerically, which is already Firebase key order.
            return list.isEmpty ? .empty : internalNode(list, priority: nil, reusing: stored)
        case .object(let members):
            return try buildObject(members, &location, stored)
        }
    }

    /// The children of a stored node, looked up by key in any order, cheapest in key order: an array's indices,
    /// or an object sent back in the order it was read, cost one step of an iterator each instead of a search.
    private struct StoredChildren {
        let node: Node
        var iterator: NodeChildren.Iterator
        var next: (key: String, node: Node)?

        init(_ node: Node) {
            self.node = node
            iterator = node.entries.makeIterator()
            next = iterator.next()
        }

        /// The stored child named `key`, or the empty node.
        mutating func child(_ key: String) -> Node {
            while let candidate = next, compareKeys(candidate.key, key) < 0 { next = iterator.next() }
            if let candidate = next, sameKey(candidate.key, key) {
                next = iterator.next()
                return candidate.node
            }
            // Out of order (or absent): a search.
            return node.hasChildren ? node.child(key) : .empty
        }
    }

    /// The internal node of `children` (sorted; already the stored instances where equal) and `priority`: `stored`
    /// itself when it holds exactly those.
    private static func internalNode(
        _ children: [(key: String, node: Node)], priority: JSONValue?, reusing stored: Node
    ) -> Node {
        if stored.hasChildren, JSONValue.identical(stored.priorityValue, priority),
            stored.entries.holdsExactly(children)
        {
            return stored
        }
        return Node(validatedLeaf: nil, priority: priority, children: NodeChildren(packing: children))
    }

    private static func buildObject(_ members: [JSONMember], _ location: inout [String], _ stored: Node)
        throws(DataError) -> Node
    {
        var list: [(key: String, node: Node)] = []
        list.reserveCapacity(members.count)
        var priority: JSONValue?
        var wrapped: JSONValue?
        var realMembers = 0
        var storedChildren = StoredChildren(stored)
        for member in members {
            let key = member.key
            if key.utf8.first == UInt8(ascii: ".") {
                if sameKey(key, Key.priority) {
                    try checkDepth(&location, key)
                    priority = try validPriority(member.value, at: Path(segments: location + [key]))
                } else if sameKey(key, Key.value) {
                    try checkDepth(&location, key)
                    wrapped = member.value
                } else if sameKey(key, Key.serverValue) {
                    throw DataError(.unresolvedServerValue, at: Path(segments: location))
                } else {
                    throw DataError(.invalidKey, at: Path(segments: location))
                }
                continue
            }
            realMembers += 1
            guard Key.isValid(key) else { throw DataError(.invalidKey, at: Path(segments: location)) }
            let child = try buildChild(key, member.value, &location, storedChildren.child(key))
            if !child.isEmpty { list.append((key, child)) }
        }
        if let wrapped {
            guard realMembers == 0 else { throw DataError(.invalidValueWrapper, at: Path(segments: location)) }
            switch wrapped {
            case .null: return .empty
            case .bool, .int, .double, .string:
                location.append(Key.value)
                let leaf = try validLeaf(wrapped, location)
                location.removeLast()
                if JSONValue.identical(leaf, stored.leafValue), JSONValue.identical(priority, stored.priorityValue) {
                    return stored
                }
                return Node(validatedLeaf: leaf, priority: priority, entries: [])
            case .array, .object:
                throw DataError(.invalidValueWrapper, at: Path(segments: location))
            }
        }
        if list.isEmpty { return .empty }
        list.sort { compareKeys($0.key, $1.key) < 0 }
        for i in list.indices.dropFirst() where compareKeys(list[i - 1].key, list[i].key) == 0 {
            throw DataError(.duplicateKey, at: Path(segments: location))
        }
        return internalNode(list, priority: priority, reusing: stored)
    }

    private static func buildChild(_ key: String, _ json: JSONValue, _ location: inout [String], _ stored: Node)
        throws(DataError) -> Node
    {
        try checkDepth(&location, key)
        location.append(key)
        defer { location.removeLast() }
        return try build(json, &location, stored)
    }

    private static func checkDepth(_ location: inout [String], _ key: String) throws(DataError) {
        guard location.count < Path.maxDepth else {
            throw DataError(.tooDeep, at: Path(segments: location + [key]))
        }
    }

    private static func validLeaf(_ json: JSONValue, _ location: [String]) throws(DataError) -> JSONValue {
        switch json {
        case .double(let d) where !d.isFinite:
            throw DataError(.invalidNumber, at: Path(segments: location))
        case .string(let s) where s.utf8.count > maxStringBytes:
            throw DataError(.stringTooLarge, at: Path(segments: location))
        default:
            return json
        }
    }

    private static func validPriority(_ json: JSONValue, at path: Path) throws(DataError) -> JSONValue? {
        switch json {
        case .null: return nil
        case .int: return json
        case .double(let d):
            guard d.isFinite else { throw DataError(.invalidPriority, at: path) }
            return json
        case .string(let s):
            guard s.utf8.count <= maxStringBytes else { throw DataError(.stringTooLarge, at: path) }
            return json
        case .bool, .array, .object:
            throw DataError(.invalidPriority, at: path)
        }
    }

    /// The node as JSON.
    ///
    /// - Parameter export: `false` (REST GET): no priorities, internal nodes that look like arrays become
    ///   arrays. `true` (`format=export`, WebSocket pushes): `.priority` members and `{".value", ".priority"}`
    ///   leaves, never arrays.
    /// - Returns: `.null` for the empty node.
    public func json(export: Bool = false) -> JSONValue {
        if let leaf = leafValue {
            if export, let p = priorityValue {
                return .object([JSONMember(Key.value, leaf), JSONMember(Key.priority, p)])
            }
            return leaf
        }
        if entries.isEmpty { return .null }
        if !export, let length = arrayLength() {
            var items = [JSONValue](repeating: .null, count: length)
            for entry in entries { items[Int(entry.key)!] = entry.node.json(export: false) }
            return .array(items)
        }
        var members: [JSONMember] = []
        members.reserveCapacity(entries.count + 1)
        if export, let p = priorityValue { members.append(JSONMember(Key.priority, p)) }
        for entry in entries { members.append(JSONMember(entry.key, entry.node.json(export: export))) }
        return .object(members)
    }

    /// Appends `json(export:)` serialized compactly (as `JSONValue.write(into:)` would) without building the
    /// `JSONValue` first: the realtime fan-out serializes every change this way.
    public func writeJSON(export: Bool = false, into out: inout [UInt8]) {
        if let leaf = leafValue {
            if export, let p = priorityValue {
                out.append(contentsOf: #"{".value":"#.utf8)
                leaf.write(into: &out)
                out.append(contentsOf: #",".priority":"#.utf8)
                p.write(into: &out)
                out.append(UInt8(ascii: "}"))
                return
            }
            leaf.write(into: &out)
            return
        }
        if entries.isEmpty {
            out.append(contentsOf: "null".utf8)
            return
        }
        if !export, let length = arrayLength() {
            var items = [Node?](repeating: nil, count: length)
            for entry in entries { items[Int(entry.key)!] = entry.node }
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if let item { item.writeJSON(export: false, into: &out) } else { out.append(contentsOf: "null".utf8) }
            }
            out.append(UInt8(ascii: "]"))
            return
        }
        out.append(UInt8(ascii: "{"))
        var first = true
        if export, let p = priorityValue {
            out.append(contentsOf: #"".priority":"#.utf8)
            p.write(into: &out)
            first = false
        }
        if let packed = entries.packed {
            if !first { out.append(UInt8(ascii: ",")) }
            packed.writeJSONMembers(export: export, into: &out)
            out.append(UInt8(ascii: "}"))
            return
        }
        for entry in entries {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            JSONValue.writeQuoted(entry.key, into: &out)
            out.append(UInt8(ascii: ":"))
            entry.node.writeJSON(export: export, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// The node truncated one level deep (REST `shallow=true`): `{key: true, …}` for an internal node, the
    /// primitive for a leaf, `.null` when empty. Priorities are dropped.
    public func shallowJSON() -> JSONValue {
        if let leaf = leafValue { return leaf }
        if entries.isEmpty { return .null }
        return .object(entries.map { JSONMember($0.key, .bool(true)) })
    }

    /// The array length when the plain form should be an array (Protocol.md#Arrays), else nil.
    private func arrayLength() -> Int? {
        var maxKey = -1
        for position in entries.indices {
            guard let n = Node.canonicalIndex(entries.key(at: position)) else { return nil }
            maxKey = max(maxKey, n)
        }
        return maxKey < 2 * entries.count ? maxKey + 1 : nil
    }

    /// The key's value if it matches `^(0|[1-9][0-9]*)$` and is small enough to be an array index.
    private static func canonicalIndex(_ key: String) -> Int? {
        let utf8 = key.utf8
        guard let first = utf8.first, utf8.count <= 15 else { return nil }
        if first == UInt8(ascii: "0") { return utf8.count == 1 ? 0 : nil }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}
