// Node+Merge -- applying many writes at once (REST PATCH, WebSocket `m`) in one pass per touched node.
//
// Applying k child updates to a node with n children one `settingChild` at a time copies the child array k
// times (O(k·n)). `updatingChildren` instead sorts the updates (O(k log k)) and merges them with the existing
// children in a single pass (O(n + k)); for a few updates into a long chunked list, k `settingChild`s (O(k·√n))
// cost less. `merging` groups path updates by their first key and recurses, so every
// touched node is rebuilt exactly once and untouched subtrees are shared.

extension Node {
    /// This node with several children replaced at once; empty nodes remove children.
    ///
    /// - Parameter updates: Key/node pairs. A key may appear once (programmer error otherwise); `.priority`
    ///   sets the priority from the node's leaf value.
    /// - Returns: The new node (`.empty` when no child remains).
    public func updatingChildren(_ updates: [(key: String, node: Node)]) -> Node {
        if updates.isEmpty { return self }
        if updates.count == 1 { return settingChild(updates[0].key, updates[0].node) }
        // A few updates into a long (chunked) list: each `settingChild` copies one chunk and the directory
        // (O(√n)), cheaper than rebuilding all n entries (a publish touching 30 of 10,000 users).
        if entries.count > NodeChildren.flatLimit, updates.count * 16 < entries.count,
            !updates.contains(where: { sameKey($0.key, Key.priority) })
        {
            return updates.reduce(self) { $0.settingChild($1.key, $1.node) }
        }
        var newPriority = priorityValue
        var sorted: [(key: String, node: Node)] = []
        sorted.reserveCapacity(updates.count)
        for update in updates {
            if sameKey(update.key, Key.priority) {
                newPriority = Node.checkedPriority(update.node.leafValue)
            } else {
                sorted.append(update)
            }
        }
        sorted.sort { compareKeys($0.key, $1.key) < 0 }
        let entries = Array(self.entries)
        var merged: [(key: String, node: Node)] = []
        merged.reserveCapacity(entries.count + sorted.count)
        var i = 0
        var j = 0
        while i < entries.count || j < sorted.count {
            let c: Int
            if i == entries.count {
                c = 1
            } else if j == sorted.count {
                c = -1
            } else {
                c = compareKeys(entries[i].key, sorted[j].key)
            }
            if c < 0 {
                merged.append(entries[i])
                i += 1
                continue
            }
            precondition(
                j + 1 == sorted.count || compareKeys(sorted[j].key, sorted[j + 1].key) != 0,
                "updatingChildren got a duplicate key")
            if !sorted[j].node.isEmpty { merged.append(sorted[j]) }
            if c == 0 { i += 1 }
            j += 1
        }
        if merged.isEmpty {
            // Nothing left but a leaf's own value, if any (removing absent children leaves a leaf alone).
            return leafValue != nil ? withPriority(newPriority) : .empty
        }
        // A leaf that gains children becomes internal; its value is replaced, its priority kept.
        return Node(validatedLeaf: nil, priority: newPriority, entries: merged)
    }

    /// A new tree with every `(path, node)` update applied, paths relative to this node.
    ///
    /// Updates apply in order, so when one path lies under another the later one wins where they overlap
    /// (REST refuses such bodies before they get here). A `.priority` update applies to the node that results
    /// from all the updates at its level, wherever it appears among them. Each touched node is rebuilt once.
    public func merging(_ updates: [(path: Path, node: Node)]) -> Node {
        merging(updates.map { (segments: $0.path.segments[...], node: $0.node) })
    }

    private func merging(_ updates: [(segments: ArraySlice<String>, node: Node)]) -> Node {
        if updates.isEmpty { return self }
        if updates.contains(where: { $0.segments.isEmpty }) {
            // A replacement of this node mixed with other updates: apply strictly in order.
            var result = self
            for update in updates {
                result = result.setting(update.node, at: Path(segments: Array(update.segments)))
            }
            return result
        }
        if leafValue != nil, let first = updates.firstIndex(where: { !$0.node.isEmpty && !isPriorityOnly($0.segments) })
        {
            // Writing below a leaf replaces it at the first non-empty write; earlier removals are no-ops. Apply
            // that prefix in order, then merge the rest into the (now internal) node.
            var result = self
            for update in updates[...first] {
                result = result.setting(update.node, at: Path(segments: Array(update.segments)))
            }
            return result.merging(Array(updates[(first + 1)...]))
        }
        // Group by first key (exact bytes), keeping each group's updates in their original order.
        let order = updates.indices.sorted { a, b in
            let c = compareKeys(updates[a].segments.first!, updates[b].segments.first!)
            return c != 0 ? c < 0 : a < b
        }
        var childUpdates: [(key: String, node: Node)] = []
        // Many children written at once (a publish's thousands of attendees under one parent): the groups come in
        // key order, so the children are found by walking them alongside instead of one search each.
        let walks = order.count * 16 >= entries.count
        var walk = entries.makeIterator()
        var walked = walks ? walk.next() : nil
        var start = 0
        while start < order.count {
            let key = updates[order[start]].segments.first!
            var end = start + 1
            while end < order.count && sameKey(updates[order[end]].segments.first!, key) { end += 1 }
            let group = order[start..<end].map { (segments: updates[$0].segments.dropFirst(), node: updates[$0].node) }
            if sameKey(key, Key.priority) {
                childUpdates.append((key, group.last!.node))
            } else {
                let old: Node
                if walks {
                    while let current = walked, compareKeys(current.key, key) < 0 { walked = walk.next() }
                    old = walked.map { sameKey($0.key, key) ? $0.node : .empty } ?? .empty
                } else {
                    old = child(key)
                }
                childUpdates.append((key, old.merging(group)))
            }
            start = end
        }
        return updatingChildren(childUpdates)
    }

    private func isPriorityOnly(_ segments: ArraySlice<String>) -> Bool {
        segments.count == 1 && sameKey(segments.first!, Key.priority)
    }
}
