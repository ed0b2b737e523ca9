// Node+Reuse -- a written node that keeps the stored instances of the subtrees it does not change.
//
// A client that writes a whole region again (an organiser saving all of `pendingContent`, an admin script setting
// an event's directory) sends mostly data the tree holds already. Parsed, that data is all new instances, and
// everything the daemon keeps by node identity starts over: the publish engine's parsed items (`ParsedItems`),
// its memo of verified locations (`PublishMemo`), every cached wire hash, and the sharing between the tree and
// the memory of earlier versions. `reusing` puts the stored instance back wherever the data is exactly the same,
// so a write costs the identity-keyed caches only what it changed. Nodes are immutable: sharing is safe.
//
// "Exactly the same" is stricter than Firebase equality: the same primitive case and bits (`1` and `1.0` stay
// apart), keys and strings byte for byte, the same priority. Two trees that are equal only in Firebase's sense
// keep the written instance, as before.

extension Node {
    /// This node, with every subtree that holds exactly the data of the subtree at the same place in `stored`
    /// replaced by that stored instance: `stored` itself when the whole is the same.
    ///
    /// Both trees are walked once, side by side in key order: O(size of `self` + size of the matching part of
    /// `stored`), no lookups. The result holds the same data as `self`.
    public func reusing(_ stored: Node) -> Node {
        if self === stored || stored.isEmpty || isEmpty { return self }
        let samePriority = JSONValue.identical(priorityValue, stored.priorityValue)
        if let leaf = leafValue {
            return samePriority && JSONValue.identical(leaf, stored.leafValue) ? stored : self
        }
        guard stored.hasChildren else { return self }
        let mine = entries
        let theirs = stored.entries
        var allStored = samePriority && mine.count == theirs.count
        // Built only once a child is replaced: the children before it, then every child.
        var rebuilt: [(key: String, node: Node)]?
        var storedChildren = theirs.makeIterator()
        var next = storedChildren.next()
        for (index, entry) in mine.enumerated() {
            while let candidate = next, compareKeys(candidate.key, entry.key) < 0 { next = storedChildren.next() }
            var node = entry.node
            if let candidate = next, sameKey(candidate.key, entry.key) {
                node = entry.node.reusing(candidate.node)
                next = storedChildren.next()
            }
            if node !== entry.node, rebuilt == nil {
                rebuilt = Array(mine.prefix(index))
                rebuilt!.reserveCapacity(mine.count)
            }
            rebuilt?.append((entry.key, node))
            if allStored, node !== theirs[index].node { allStored = false }
        }
        if allStored { return stored }
        guard let rebuilt else { return self }
        return Node(validatedLeaf: nil, priority: priorityValue, entries: rebuilt)
    }
}

extension JSONValue {
    /// Whether two optional primitives are the very same value: the same case, numbers by their bits, strings
    /// byte for byte (stricter than `==`, for which `1 == 1.0`).
    public static func identical(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (.bool(let x)?, .bool(let y)?): x == y
        case (.int(let x)?, .int(let y)?): x == y
        case (.double(let x)?, .double(let y)?): x.bitPattern == y.bitPattern
        case (.string(let x)?, .string(let y)?): JSONKey.bytesEqual(x, y)
        default: false
        }
    }
}
