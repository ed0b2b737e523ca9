// PublishEngine -- the writes of publish, revert, per-item publish/unpublish and rollback, as pure functions.
//
// Each function reads the event root (the namespace's whole tree, as the server holds it inside its single
// commit) and returns the complete list of (path, node) writes to apply in ONE atomic multi-location update; an
// empty node deletes. Paths never overlap. Derived locations are written only when their content changes, and
// only their `content` child, so siblings (a user's profile, say) stay untouched and listeners of unchanged
// locations get no event. A location that already holds items is written item by item, only the items that
// changed (see Architecture.md#Publishing-item-by-item): one edited item costs that item's rows and events.
// Every publish also sets private/admin/content and lastPublishedAt and appends a history record (see
// PublishHistory).

import CanopyCore

/// The personalized-content publish engine: pure functions from the event tree to writes.
public enum PublishEngine {
    /// Publishes `pendingContent`: derived locations, `private/admin/content`, `lastPublishedAt`, history.
    ///
    /// - Parameters:
    ///   - root: The event (namespace) root.
    ///   - now: Server time in ms.
    ///   - publisher: The `uid` of the publishing token, recorded in the history.
    ///   - cache: The items the previous publish of this event parsed (see `ParsedItems`); optional.
    /// - Throws: `PublishError` when an item is invalid; nothing is written then.
    public static func publishWrites(root: Node, now: Int64, publisher: String?, cache: ParsedItems? = nil)
        throws(PublishError) -> [(path: Path, node: Node)]
    {
        try writes(
            publishing: root.node(at: PublishLayout.pendingContent), root: root, now: now,
            publisher: publisher, cache: cache)
    }

    /// Throws away unpublished edits: `pendingContent` becomes the published `content` (item by item).
    public static func revertWrites(root: Node) -> [(path: Path, node: Node)] {
        var out: [(path: Path, node: Node)] = []
        childWrites(
            at: PublishLayout.pendingContent, old: root.node(at: PublishLayout.pendingContent),
            new: root.node(at: PublishLayout.content), into: &out)
        return out
    }

    /// Publishes one item's pending state: its new version, or its removal when it was deleted from pending.
    /// Other published items stay as they are even if their drafts changed.
    ///
    /// - Throws: `PublishError` `.unknownItem` when `key` is neither pending nor published, or the item is invalid.
    public static func publishItemWrites(
        root: Node, key: String, now: Int64, publisher: String?, cache: ParsedItems? = nil
    ) throws(PublishError) -> [(path: Path, node: Node)]
    {
        let draft = root.node(at: PublishLayout.pendingContent).child(key)
        let content = root.node(at: PublishLayout.content)
        guard !draft.isEmpty || content.hasChild(key) else {
            throw PublishError(.unknownItem, key: key)
        }
        if !draft.isEmpty { _ = try ContentItem(key: key, node: draft) }
        return try writes(
            publishing: content.settingChild(key, draft), root: root, now: now, publisher: publisher, cache: cache)
    }

    /// Removes one published item from `content` and every derived location; `pendingContent` keeps its draft.
    ///
    /// - Throws: `PublishError` `.notPublished` when `key` is not published.
    public static func unpublishItemWrites(
        root: Node, key: String, now: Int64, publisher: String?, cache: ParsedItems? = nil
    ) throws(PublishError) -> [(path: Path, node: Node)]
    {
        let content = root.node(at: PublishLayout.content)
        guard content.hasChild(key) else { throw PublishError(.notPublished, key: key) }
        return try writes(
            publishing: content.settingChild(key, .empty), root: root, now: now, publisher: publisher, cache: cache)
    }

    /// Republishes the snapshot stored in history entry `historyID`. `pendingContent` is set to the snapshot too,
    /// so the event is wholly back at that version; the rollback itself is recorded as a new history entry.
    ///
    /// - Throws: `PublishError` `.unknownHistoryEntry`, or an item error if the snapshot no longer validates.
    public static func rollbackWrites(
        root: Node, historyID: String, now: Int64, publisher: String?, cache: ParsedItems? = nil
    ) throws(PublishError) -> [(path: Path, node: Node)]
    {
        guard let snapshot = PublishHistory.snapshot(id: historyID, root: root) else {
            throw PublishError(.unknownHistoryEntry, key: historyID)
        }
        var out = try writes(
            publishing: snapshot, root: root, now: now, publisher: publisher, rollbackOf: historyID, cache: cache)
        childWrites(
            at: PublishLayout.pendingContent, old: root.node(at: PublishLayout.pendingContent), new: snapshot,
            into: &out)
        return out
    }

    /// Checks every pending item; the first problem is thrown (for clear CLI errors before a preview or dry run).
    public static func validate(root: Node) throws(PublishError) {
        _ = try fanOut(
            pending: root.node(at: PublishLayout.pendingContent), settings: PublishSettings(root: root))
    }

    /// The writes that make `content` the published state.
    static func writes(
        publishing content: Node, root: Node, now: Int64, publisher: String?, rollbackOf: String? = nil,
        cache: ParsedItems? = nil
    )
        throws(PublishError) -> [(path: Path, node: Node)]
    {
        // `private/admin/content`, `lastPublishedAt` and the history record need nothing from the fan-out: they are
        // computed on another core while this thread parses the items and compares the derived locations.
        let published = ConcurrentPart { () -> [(path: Path, node: Node)] in
            var out: [(path: Path, node: Node)] = []
            // The history record names each item by its hash: computed before the comparison with the published
            // items, so that a stored item found equal by a walk adopts it, and the next publish compares the two by
            // hash. Hashed after, the 10,000-row item of `bench publish` was walked again by the publish after a
            // foreign rewrite (7 ms).
            for (_, item) in content.children { _ = item.hash }
            childWrites(at: PublishLayout.content, old: root.node(at: PublishLayout.content), new: content, into: &out)
            out.append((PublishLayout.lastPublishedAt, Node(leaf: .int(now))))
            out += PublishHistory.appendWrites(
                root: root, content: content, now: now, publisher: publisher, rollbackOf: rollbackOf, cache: cache)
            return out
        }
        let settings = PublishSettings(root: root)
        var out: [(path: Path, node: Node)]
        var memo: PublishMemo
        do throws(PublishError) {
            let items = try parseItems(content, cache: cache)
            var touched = PublishMemo.Touched()
            if let next = cache?.nextMemo(items: items, settings: settings) {
                (memo, touched) = next
            } else {
                memo = PublishMemo(settings: settings, items: items, fan: try fanOut(items: items, settings: settings))
            }
            out = derivedWrites(root: root, memo: &memo, touched: touched)
        } catch {
            _ = published.value()
            throw error
        }
        out += published.value()
        cache?.keep(memo)
        return out
    }

    /// The writes that turn every derived location's `content` into `memo`'s fan-out, item by item where a
    /// location already holds items (see `childWrites`), the whole `content` where it held nothing, and one
    /// delete for a user, tier or group that no longer receives anything. Ordered: public, users, tiers, groups,
    /// ids in key order, items in key order. Only the locations in `touched`, those the memo cannot vouch for, and those with no node vouched
    /// for are compared in full (see PublishMemo); `memo` records what was found equal, and what was written.
    static func derivedWrites(root: Node, memo: inout PublishMemo, touched: PublishMemo.Touched)
        -> [(path: Path, node: Node)]
    {
        var out: [(path: Path, node: Node)] = []
        let stored = root.node(at: PublishLayout.publicContent)
        if touched.publicContent || memo.verifiedPublic !== stored {
            if differs(stored, memo.fan.publicContent) {
                childWrites(at: PublishLayout.publicContent, old: stored, new: memo.fan.publicContent, into: &out)
                memo.verifiedPublic = nil
            } else {
                memo.verifiedPublic = stored
            }
        }
        let families: [(Path, @Sendable (String) -> Path)] = [
            (PublishLayout.users, PublishLayout.userContent), (PublishLayout.tiers, PublishLayout.tierContent),
            (PublishLayout.groups, PublishLayout.groupContent),
        ]
        for (f, (parent, contentPath)) in families.enumerated() {
            let existing = root.node(at: parent)
            let buckets = memo.buckets(f)
            var consider = touched.ids[f].union(memo.unverified[f])
            if memo.fresh { consider.formUnion(buckets.keys.map(JSONKey.init)) }
            // The family's children in tree order, walked beside those of the last walk: a child still the very
            // node found equal then is vouched for; one that is new, changed or gone is compared in full. A
            // merge by key order, so no child's key is hashed.
            let last = memo.walked[f]
            var walked: [PublishMemo.Walked] = []
            walked.reserveCapacity(existing.childCount)
            var i = 0
            for (id, node) in existing.children {
                var vouched = false
                while i < last.count {
                    if sameKey(last[i].key, id) {
                        vouched = last[i].vouched && last[i].node === node
                        i += 1
                        break
                    }
                    guard compareKeys(last[i].key, id) < 0 else { break }
                    consider.insert(JSONKey(last[i].key))  // gone from the tree
                    i += 1
                }
                if !vouched { consider.insert(JSONKey(id)) }
                walked.append(PublishMemo.Walked(key: id, node: node, vouched: vouched))
            }
            for gone in last[i...] { consider.insert(JSONKey(gone.key)) }
            var at = 0  // in `walked`, which is in key order too
            let keys = inKeyOrder(consider, treeOrder: walked)
            // Each location's comparison is a pure function of immutable nodes: a full publish's thousands run on
            // every core, and their writes are appended in key order below.
            let compared = keys.parallelMap(minimumPerChunk: 512) { entry -> (equal: Bool, writes: [(path: Path, node: Node)]) in
                let key = entry.key
                let old = (entry.stored ?? existing.child(key.string)).child(PublishLayout.contentKey)
                let new = buckets[key.string] ?? [:]
                var writes: [(path: Path, node: Node)] = []
                // No writes exactly when `old` holds `new` already (`differs` is false): one pass over the items,
                // where `differs` and then `childWrites` took two over a changed location.
                childWrites(at: contentPath(key.string), old: old, new: new, into: &writes)
                return (writes.isEmpty, writes)
            }
            for ((key, _), (equal, writes)) in zip(keys, compared) {
                let id = key.string
                while at < walked.count, compareKeys(walked[at].key, id) < 0 { at += 1 }
                let new = buckets[id] ?? [:]
                out += writes
                if !equal && !new.isEmpty {
                    memo.unverified[f].insert(key)
                } else if !memo.unverified[f].isEmpty {
                    memo.unverified[f].remove(key)
                }
                if at < walked.count, sameKey(walked[at].key, id) { walked[at].vouched = equal }
            }
            memo.walked[f] = walked
            // The last walk holds the nodes the tree held then; those since replaced are freed off this thread.
            BackgroundRelease.release(consume last)
        }
        memo.fresh = false
        return out
    }

    /// `keys` in key order, each with the node the tree holds for it when `walked` gave it (nil: look it up, or
    /// none). Most keys are among `walked`, which the tree gives in key order: those are taken in that order, with
    /// their nodes, and only the others (ids new to the tree or gone from it) are sorted and merged in. Sorting all
    /// 10,000 ids of a full publish took 3–4 ms on its critical path, and looking each one up again 2–3.
    static func inKeyOrder(_ keys: Set<JSONKey>, treeOrder walked: [PublishMemo.Walked])
        -> [(key: JSONKey, stored: Node?)]
    {
        let byKey: ((key: JSONKey, stored: Node?), (key: JSONKey, stored: Node?)) -> Bool = {
            compareKeys($0.key.string, $1.key.string) < 0
        }
        guard keys.count > 64 else { return keys.map { ($0, nil) }.sorted(by: byKey) }
        var others = keys
        var inTree: [(key: JSONKey, stored: Node?)] = []
        inTree.reserveCapacity(keys.count)
        for entry in walked {
            if let key = others.remove(JSONKey(entry.key)) { inTree.append((key, entry.node)) }
        }
        if others.isEmpty { return inTree }
        let rest = others.map { (key: $0, stored: Node?.none) }.sorted(by: byKey)
        var merged: [(key: JSONKey, stored: Node?)] = []
        merged.reserveCapacity(keys.count)
        var i = 0
        var j = 0
        while i < inTree.count || j < rest.count {
            if j == rest.count || (i < inTree.count && byKey(inTree[i], rest[j])) {
                merged.append(inTree[i])
                i += 1
            } else {
                merged.append(rest[j])
                j += 1
            }
        }
        return merged
    }

    /// Whether every part of the tree an engine action reads is the same in `new` as in `old`: everything under
    /// `private/admin`, `public/admin/content`, and the `content` of each user, tier and group (compared by node
    /// identity, so a rewrite with equal data counts as a change). The writes an action computed from `old` are then
    /// exactly those it would compute from `new`, so a publish need not be computed again because someone wrote
    /// elsewhere meanwhile (a chat, an attendee's own data beside their `content`). Must name everything the engine
    /// reads: `derivedWrites`, `PublishSettings`, `PublishHistory`, `Completeness`, revert and rollback.
    public static func readsSameInputs(_ old: Node, _ new: Node) -> Bool {
        if old === new { return true }
        guard old.node(at: PublishLayout.admin) === new.node(at: PublishLayout.admin),
            sameNode(old.node(at: PublishLayout.publicContent), new.node(at: PublishLayout.publicContent))
        else { return false }
        for family in [PublishLayout.users, PublishLayout.tiers, PublishLayout.groups] {
            let a = old.node(at: family)
            let b = new.node(at: family)
            if a === b { continue }
            // Both lists of ids in key order, side by side: an id only one side has must hold no content there.
            var left = a.children.makeIterator()
            var right = b.children.makeIterator()
            var x = left.next()
            var y = right.next()
            while x != nil || y != nil {
                let order = x == nil ? 1 : y == nil ? -1 : compareKeys(x!.key, y!.key)
                if order < 0 {
                    guard x!.node.child(PublishLayout.contentKey).isEmpty else { return false }
                    x = left.next()
                } else if order > 0 {
                    guard y!.node.child(PublishLayout.contentKey).isEmpty else { return false }
                    y = right.next()
                } else {
                    if x!.node !== y!.node {
                        let c = x!.node.child(PublishLayout.contentKey)
                        let d = y!.node.child(PublishLayout.contentKey)
                        guard sameNode(c, d) else { return false }
                    }
                    x = left.next()
                    y = right.next()
                }
            }
        }
        return true
    }

    /// The same instance, or both empty.
    private static func sameNode(_ a: Node, _ b: Node) -> Bool { a === b || (a.isEmpty && b.isEmpty) }

    /// Every derived location whose `content` differs from `fanOut`'s: its path, its stored node and its new
    /// items (empty for a user, tier or group that no longer receives anything). Ordered: public, users, tiers,
    /// groups, ids in key order (the order of `derivedWrites`).
    static func changedLocations(root: Node, fanOut fan: FanOut)
        -> [(path: Path, old: Node, new: [String: Node])]
    {
        var out: [(path: Path, old: Node, new: [String: Node])] = []
        func consider(_ path: Path, _ old: Node, _ new: [String: Node]) {
            if differs(old, new) { out.append((path, old, new)) }
        }
        consider(PublishLayout.publicContent, root.node(at: PublishLayout.publicContent), fan.publicContent)
        let families: [(Path, [String: [String: Node]], (String) -> Path)] = [
            (PublishLayout.users, fan.users, PublishLayout.userContent),
            (PublishLayout.tiers, fan.tiers, PublishLayout.tierContent),
            (PublishLayout.groups, fan.groups, PublishLayout.groupContent),
        ]
        for (parent, buckets, contentPath) in families {
            let existing = root.node(at: parent)
            var ids = Set<JSONKey>(buckets.keys.map(JSONKey.init))
            for (id, node) in existing.children where node.hasChild(PublishLayout.contentKey) {
                ids.insert(JSONKey(id))
            }
            for id in ids.map(\.string).sorted(by: { compareKeys($0, $1) < 0 }) {
                consider(contentPath(id), existing.child(id).child(PublishLayout.contentKey), buckets[id] ?? [:])
            }
        }
        return out
    }

    /// Whether `old` is not exactly the node holding the children `new` (no leaf value, no priority).
    static func differs(_ old: Node, _ new: [String: Node]) -> Bool {
        if new.isEmpty { return !old.isEmpty }
        guard !old.isLeaf, old.priority == nil, old.childCount == new.count else { return true }
        for (key, node) in new where !same(old.child(key), node) { return true }
        return false
    }

    /// Whether a stored item copy (`old`) and the copy a publish places (`new`) hold the same data, as cheaply as
    /// the history of both allows:
    /// - the same instance (a copy an earlier publish placed, from the `ParsedItems` cache): equal;
    /// - `old` hashed by an earlier publish: the hashes decide (`new` is usually one instance shared by every
    ///   location it goes to, so its hash is computed once);
    /// - otherwise a comparison that stops at the first difference (`Node.hasSameData`).
    /// Nothing is hashed for the comparison's sake: hashing every stored copy up front cost a SHA-1 per node of
    /// each, 40% of a full publish's CPU, and hashing each copy found equal (so that a later publish could compare
    /// hashes) cost 20–25 ms after a foreign write to 10,000 locations, for a saving that only a second comparison
    /// of the very same copy would collect. A copy found equal keeps the placed copy's hash when that one has it
    /// (`hasSameData` shares it for free), so the next comparison is by hash anyway.
    static func same(_ old: Node, _ new: Node) -> Bool {
        if old === new { return true }
        if old.isHashCached { return old.hash == new.hash }
        return old.hasSameData(as: new)
    }

    /// Appends the writes that make the node at `path` (now `old`) hold exactly the children `new`.
    ///
    /// When `old` has children, only the children that differ are written, each at its own path (`path/<key>`;
    /// an empty node deletes): an edited item costs its own rows, and listeners are told of that item alone.
    /// When `old` is empty or a leaf, or `new` is empty, the node is written whole (once).
    static func childWrites(
        at path: Path, old: Node, new: [String: Node], into out: inout [(path: Path, node: Node)]
    ) {
        if new.isEmpty {
            if !old.isEmpty { out.append((path, .empty)) }
            return
        }
        guard old.hasChildren, old.priority == nil else {
            out.append((path, FanOut.node(new)))
            return
        }
        var changed: [(key: String, node: Node)] = []
        var absent = 0
        for (key, node) in new {
            let was = old.child(key)
            if was.isEmpty { absent += 1 }
            if !same(was, node) { changed.append((key, node)) }
        }
        // Every stored child is among `new` unless there are more of them than of `new`'s keys found: the keys are
        // then hashed to find the others (a location that lost an item), and only then.
        if old.childCount > new.count - absent {
            var kept = Set<JSONKey>()
            kept.reserveCapacity(new.count)
            for key in new.keys { kept.insert(JSONKey(key)) }
            for (key, _) in old.children where !kept.contains(JSONKey(key)) { changed.append((key, .empty)) }
        }
        changed.sort { compareKeys($0.key, $1.key) < 0 }
        for (key, node) in changed { out.append((path.child(key), node)) }
    }

    /// `childWrites` for a node's children.
    static func childWrites(at path: Path, old: Node, new: Node, into out: inout [(path: Path, node: Node)]) {
        if new.isLeaf || new.priority != nil {
            if !same(old, new) { out.append((path, new)) }
            return
        }
        if old.hasChildren, old.priority == nil, new.hasChildren {
            // Both in key order: walked side by side, so no key is hashed and nothing is copied.
            var olds = old.children.makeIterator()
            var news = new.children.makeIterator()
            var o = olds.next()
            var n = news.next()
            while o != nil || n != nil {
                if let a = o, let b = n, sameKey(a.key, b.key) {
                    if !same(a.node, b.node) { out.append((path.child(b.key), b.node)) }
                    o = olds.next()
                    n = news.next()
                } else if let a = o, n == nil || compareKeys(a.key, n!.key) < 0 {
                    out.append((path.child(a.key), .empty))
                    o = olds.next()
                } else if let b = n {
                    out.append((path.child(b.key), b.node))
                    n = news.next()
                }
            }
            return
        }
        var items: [String: Node] = [:]
        items.reserveCapacity(new.childCount)
        for (key, node) in new.children { items[key] = node }
        childWrites(at: path, old: old, new: items, into: &out)
    }
}
