// Node+Update -- persistent updates: each returns a new tree sharing all untouched subtrees.
//
// Cost of a write at depth d: d new nodes, each copying the part of its child list that changes (the whole
// array when small, one chunk plus the chunk directory when large; see `NodeChildren`), plus O(log children)
// key comparisons to find the slot. Nothing outside the path is copied or visited.
// Emptiness cascades: a node that loses its last child becomes empty and is removed from its parent, and so on
// up to the root. A priority never survives on an empty node.

extension Node {
    /// This node with child `key` replaced by `node`; an empty `node` removes the child.
    ///
    /// `.priority` as the key sets the priority instead (from `node`'s leaf value). Setting a child on a leaf
    /// turns it into an internal node with that one child; the priority is kept.
    public func settingChild(_ key: String, _ node: Node) -> Node {
        if sameKey(key, Key.priority) { return withPriority(node.leafValue) }
        let slot = entries.slot(of: key)
        if node.isEmpty {
            guard slot.found else { return self }
            if entries.count == 1 { return .empty }
            return Node(validatedLeaf: nil, priority: priorityValue, children: entries.removing(at: slot))
        }
        if leafValue != nil {
            return Node(validatedLeaf: nil, priority: priorityValue, entries: [(key, node)])
        }
        if slot.found && entries.node(at: slot) === node { return self }
        return Node(validatedLeaf: nil, priority: priorityValue, children: entries.setting((key, node), at: slot))
    }

    /// A new tree with `node` placed at `path` (replacing whatever was there, priority included).
    ///
    /// An empty `node` deletes, and ancestors left without children disappear. A path ending in `.priority`
    /// sets only the priority of the node above it (from `node`'s leaf value; empty clears it); setting the
    /// priority of an absent node changes nothing.
    public func setting(_ node: Node, at path: Path) -> Node {
        setting(node, segments: path.segments[...])
    }

    private func setting(_ node: Node, segments: ArraySlice<String>) -> Node {
        guard let first = segments.first else { return node }
        if segments.count == 1 { return settingChild(first, node) }
        let current = child(first)
        let updated = current.setting(node, segments: segments.dropFirst())
        if updated === current { return self }
        return settingChild(first, updated)
    }

    /// This node with priority `priority` (a string or finite number; nil or `.null` removes it).
    /// The empty node stays empty.
    public func withPriority(_ priority: JSONValue?) -> Node {
        if isEmpty { return self }
        let p = Node.checkedPriority(priority)
        if primitivesEqual(p, priorityValue) { return self }
        return Node(validatedLeaf: leafValue, priority: p, children: entries)
    }
}
