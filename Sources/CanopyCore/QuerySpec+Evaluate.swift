// QuerySpec+Evaluate -- running a query over a node's children (Protocol.md#Query-objects, "Evaluation").
//
// 1. Each child gets an index value: its priority (priority index), itself (value index), the node at the
//    child path (child index); the key index orders by key alone.
// 2. A child is kept when start ≤ (indexValue, key) ≤ end, comparing index values with `compareIndexValues`
//    and ties with the bound's name (strict where a bound is exclusive).
// 3. With a limit, the first or last n kept children in index order remain.
// 4. The result holds the kept children (full subtrees, in key order) and no top-level priority.
// Cost: O(n) for the range filter, plus O(m log m) to order the m children in range when a limit or
// `orderedChildren` needs index order. The key index needs neither: the children already are in key order, so
// its window is a binary-searched slice, O(log n + result).

extension QuerySpec {
    /// The index value of one child (unused with the key index).
    public func indexValue(of child: Node) -> Node {
        switch index {
        case .priority: child.priorityValue.map { Node(validatedLeaf: $0, priority: nil, entries: []) } ?? .empty
        case .value: child
        case .child(let path): child.node(at: path)
        case .key: .empty
        }
    }

    /// Orders two children (index value, then key): negative, zero or positive.
    public func compareChildren(_ a: (key: String, node: Node), _ b: (key: String, node: Node)) -> Int {
        if case .key = index { return compareKeys(a.key, b.key) }
        let c = compareIndexValues(indexValue(of: a.node), indexValue(of: b.node))
        return c != 0 ? c : compareKeys(a.key, b.key)
    }

    /// The children of `node` in this query's index order (all of them: no range, no limit).
    public func orderedChildren(of node: Node) -> [(key: String, node: Node)] {
        sortedByIndex(Array(node.entries))
    }

    /// The query result for `node`: the children in range and within the limit, without `node`'s priority.
    ///
    /// A query that loads all data returns `node` unchanged. Any other query on a leaf returns `.empty`.
    public func window(of node: Node) -> Node {
        if loadsAllData { return node }
        if node.entries.isEmpty { return .empty }
        let bounds = EvaluationBounds(self)
        if index == .key { return keyWindow(of: node.entries, bounds) }
        var kept: [(key: String, node: Node)]
        if let limit, limit.count <= QuerySpec.selectionLimit {
            kept = selectLimited(node.entries, bounds, limit)
        } else {
            kept = node.entries.filter { bounds.contains($0, in: self) }
            if let limit, limit.count < kept.count {
                var ordered = sortedByIndex(kept)
                switch limit {
                case .first(let n): ordered.removeLast(ordered.count - n)
                case .last(let n): ordered.removeFirst(ordered.count - n)
                }
                kept = ordered
            }
        }
        if kept.isEmpty { return .empty }
        kept.sort { compareKeys($0.key, $1.key) < 0 }
        return Node(validatedLeaf: nil, priority: nil, entries: kept)
    }

    /// Whether one child of a queried location lies within the range (the limit is not considered).
    public func isInRange(_ child: (key: String, node: Node)) -> Bool {
        EvaluationBounds(self).contains(child, in: self)
    }

    /// Limits up to this size are served by bounded selection instead of a full sort.
    static let selectionLimit = 256

    /// The first/last `limit.count` children in range, in index order, found in one pass: a sorted buffer of at
    /// most `count` candidates, each new child binary-searched into it. O(n log k + n·k moves worst case,
    /// typically far fewer) instead of sorting all n.
    private func selectLimited(_ entries: NodeChildren, _ bounds: EvaluationBounds, _ limit: QueryLimit)
        -> [(key: String, node: Node)]
    {
        let count = limit.count
        guard count > 0 else { return [] }
        let fromLeft: Bool
        if case .first = limit { fromLeft = true } else { fromLeft = false }
        // Buffer in "preference" order: best first (smallest for .first, largest for .last).
        var best: [(entry: (key: String, node: Node), value: Node)] = []
        best.reserveCapacity(count + 1)
        func precedes(_ a: (key: String, node: Node), _ av: Node, _ b: (key: String, node: Node), _ bv: Node) -> Bool {
            var c = compareIndexValues(av, bv)
            if c == 0 { c = compareKeys(a.key, b.key) }
            return fromLeft ? c < 0 : c > 0
        }
        for entry in entries where bounds.contains(entry, in: self) {
            let value = indexValue(of: entry.node)
            if best.count == count, let worst = best.last, !precedes(entry, value, worst.entry, worst.value) {
                continue
            }
            var low = 0
            var high = best.count
            while low < high {
                let mid = (low + high) / 2
                if precedes(best[mid].entry, best[mid].value, entry, value) { low = mid + 1 } else { high = mid }
            }
            best.insert((entry, value), at: low)
            if best.count > count { best.removeLast() }
        }
        return best.map(\.entry)
    }

    /// The key index orders like the children array: the range is found by binary search and the limit is a
    /// slice, so the cost is O(log n + result).
    private func keyWindow(of entries: NodeChildren, _ bounds: EvaluationBounds) -> Node {
        var low = entries.startIndex
        var high = entries.endIndex
        if bounds.start != nil {
            low = partitionPoint(entries) { bounds.satisfiesStart($0, in: self) }
        }
        if bounds.end != nil {
            high = max(low, partitionPoint(entries) { !bounds.satisfiesEnd($0, in: self) })
        }
        var range = low..<high
        switch limit {
        case .first(let n)?: range = low..<min(high, low + n)
        case .last(let n)?: range = max(low, high - n)..<high
        case nil: break
        }
        if range.isEmpty { return .empty }
        return Node(validatedLeaf: nil, priority: nil, entries: Array(entries[range]))
    }

    /// The first index whose element satisfies `predicate`, which must be false then true along `entries`.
    private func partitionPoint(
        _ entries: NodeChildren, _ predicate: ((key: String, node: Node)) -> Bool
    ) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if predicate(entries[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }

    private func sortedByIndex(_ list: [(key: String, node: Node)]) -> [(key: String, node: Node)] {
        if case .key = index { return list }
        // Compute each index value once; the sort is stable on the key order it starts from.
        let decorated = list.map { (entry: $0, value: indexValue(of: $0.node)) }
        let sorted = decorated.sorted { a, b in
            let c = compareIndexValues(a.value, b.value)
            return c != 0 ? c < 0 : compareKeys(a.entry.key, b.entry.key) < 0
        }
        return sorted.map(\.entry)
    }
}

/// Bounds with their values turned into nodes once per evaluation.
private struct EvaluationBounds {
    let start: (bound: QueryBound, value: Node)?
    let end: (bound: QueryBound, value: Node)?

    init(_ query: QuerySpec) {
        start = query.start.map { ($0, EvaluationBounds.node(for: $0.value)) }
        end = query.end.map { ($0, EvaluationBounds.node(for: $0.value)) }
    }

    private static func node(for value: JSONValue) -> Node {
        switch value {
        case .bool, .int, .string: Node(validatedLeaf: value, priority: nil, entries: [])
        case .double(let d) where d.isFinite: Node(validatedLeaf: value, priority: nil, entries: [])
        default: .empty
        }
    }

    func contains(_ child: (key: String, node: Node), in query: QuerySpec) -> Bool {
        var indexValue: Node?
        return satisfiesStart(child, in: query, &indexValue) && satisfiesEnd(child, in: query, &indexValue)
    }

    /// Whether the child is at or after the start bound (strictly after when exclusive).
    func satisfiesStart(_ child: (key: String, node: Node), in query: QuerySpec) -> Bool {
        var indexValue: Node?
        return satisfiesStart(child, in: query, &indexValue)
    }

    /// Whether the child is at or before the end bound (strictly before when exclusive).
    func satisfiesEnd(_ child: (key: String, node: Node), in query: QuerySpec) -> Bool {
        var indexValue: Node?
        return satisfiesEnd(child, in: query, &indexValue)
    }

    private func satisfiesStart(_ child: (key: String, node: Node), in query: QuerySpec, _ indexValue: inout Node?)
        -> Bool
    {
        guard let start else { return true }
        let c = compare(start, child, query, &indexValue)
        return start.bound.isInclusive ? c <= 0 : c < 0
    }

    private func satisfiesEnd(_ child: (key: String, node: Node), in query: QuerySpec, _ indexValue: inout Node?)
        -> Bool
    {
        guard let end else { return true }
        let c = compare(end, child, query, &indexValue)
        return end.bound.isInclusive ? c >= 0 : c > 0
    }

    /// Compares a bound with a child: negative when the bound sorts before the child.
    private func compare(
        _ bound: (bound: QueryBound, value: Node), _ child: (key: String, node: Node), _ query: QuerySpec,
        _ indexValue: inout Node?
    ) -> Int {
        if case .key = query.index {
            guard case .string(let s) = bound.bound.value else { return 0 }
            return QueryName(wire: s).compare(toKey: child.key)
        }
        let value = indexValue ?? query.indexValue(of: child.node)
        indexValue = value
        let c = compareIndexValues(bound.value, value)
        return c != 0 ? c : bound.bound.name.compare(toKey: child.key)
    }
}
