// PublishEngine -- the writes of publish, revert, per-item publish/unpublish and rollback, as pure functions.
//
// Each function reads the event root (the namespace's whole tree, as the server holds it inside its single
// commit) and returns the complete list of (path, node) writes to apply in ONE atomic multi-location update; an
// empty node deletes. Paths never overlap. Derived locations are written only when their content changes, and
// only their `content` child, so siblings (a user's profile, say) stay untouched and listeners of unchanged
// locations get no event. Every publish also sets private/admin/content and lastPublishedAt and appends a
// history record (see PublishHistory).

import CanopyCore

/// The personalized-content publish engine: pure functions from the event tree to writes.
public enum PublishEngine {
    /// Publishes `pendingContent`: derived locations, `private/admin/content`, `lastPublishedAt`, history.
    ///
    /// - Parameters:
    ///   - root: The event (namespace) root.
    ///   - now: Server time in ms.
    ///   - publisher: The `uid` of the publishing token, recorded in the history.
    /// - Throws: `PublishError` when an item is invalid; nothing is written then.
    public static func publishWrites(root: Node, now: Int64, publisher: String?) throws(PublishError)
        -> [(path: Path, node: Node)]
    {
        try writes(
            publishing: root.node(at: PublishLayout.pendingContent), root: root, now: now,
            publisher: publisher)
    }

    /// Throws away unpublished edits: `pendingContent` becomes the published `content` (one write).
    public static func revertWrites(root: Node) -> [(path: Path, node: Node)] {
        [(PublishLayout.pendingContent, root.node(at: PublishLayout.content))]
    }

    /// Publishes one item's pending state: its new version, or its removal when it was deleted from pending.
    /// Other published items stay as they are even if their drafts changed.
    ///
    /// - Throws: `PublishError` `.unknownItem` when `key` is neither pending nor published, or the item is invalid.
    public static func publishItemWrites(root: Node, key: String, now: Int64, publisher: String?)
        throws(PublishError)
        -> [(path: Path, node: Node)]
    {
        let draft = root.node(at: PublishLayout.pendingContent).child(key)
        let content = root.node(at: PublishLayout.content)
        guard !draft.isEmpty || content.hasChild(key) else {
            throw PublishError(.unknownItem, key: key)
        }
        if !draft.isEmpty { _ = try ContentItem(key: key, node: draft) }
        return try writes(
            publishing: content.settingChild(key, draft), root: root, now: now, publisher: publisher)
    }

    /// Removes one published item from `content` and every derived location; `pendingContent` keeps its draft.
    ///
    /// - Throws: `PublishError` `.notPublished` when `key` is not published.
    public static func unpublishItemWrites(root: Node, key: String, now: Int64, publisher: String?)
        throws(PublishError) -> [(path: Path, node: Node)]
    {
        let content = root.node(at: PublishLayout.content)
        guard content.hasChild(key) else { throw PublishError(.notPublished, key: key) }
        return try writes(
            publishing: content.settingChild(key, .empty), root: root, now: now, publisher: publisher)
    }

    /// Republishes the snapshot stored in history entry `historyID`. `pendingContent` is set to the snapshot too,
    /// so the event is wholly back at that version; the rollback itself is recorded as a new history entry.
    ///
    /// - Throws: `PublishError` `.unknownHistoryEntry`, or an item error if the snapshot no longer validates.
    public static func rollbackWrites(root: Node, historyID: String, now: Int64, publisher: String?)
        throws(PublishError) -> [(path: Path, node: Node)]
    {
        let entry = root.node(at: PublishLayout.history).child(historyID)
        guard entry.hasChildren, entry.hasChild("publishedAt") else {
            throw PublishError(.unknownHistoryEntry, key: historyID)
        }
        let snapshot = entry.child("content")
        var out = try writes(
            publishing: snapshot, root: root, now: now, publisher: publisher, rollbackOf: historyID)
        if root.node(at: PublishLayout.pendingContent) != snapshot {
            out.append((PublishLayout.pendingContent, snapshot))
        }
        return out
    }

    /// Checks every pending item; the first problem is thrown (for clear CLI errors before a preview or dry run).
    public static func validate(root: Node) throws(PublishError) {
        _ = try fanOut(
            pending: root.node(at: PublishLayout.pendingContent), settings: PublishSettings(root: root))
    }

    /// The writes that make `content` the published state.
    static func writes(
        publishing content: Node, root: Node, now: Int64, publisher: String?, rollbackOf: String? = nil
    )
        throws(PublishError) -> [(path: Path, node: Node)]
    {
        let fan = try fanOut(pending: content, settings: PublishSettings(root: root))
        var out = derivedWrites(root: root, fanOut: fan)
        if root.node(at: PublishLayout.content) != content {
            out.append((PublishLayout.content, content))
        }
        out.append((PublishLayout.lastPublishedAt, Node(leaf: .int(now))))
        out += PublishHistory.appendWrites(
            root: root, content: content, now: now, publisher: publisher, rollbackOf: rollbackOf)
        return out
    }

    /// One write per derived location whose `content` differs from `fanOut`: new or changed contents, and
    /// deletions for users, tiers and groups that no longer receive anything. Ordered: public, users, tiers,
    /// groups, ids in key order.
    static func derivedWrites(root: Node, fanOut fan: FanOut) -> [(path: Path, node: Node)] {
        var out: [(path: Path, node: Node)] = []
        func emit(_ path: Path, _ node: Node) {
            if root.node(at: path) != node { out.append((path, node)) }
        }
        emit(PublishLayout.publicContent, FanOut.node(fan.publicContent))
        let families: [(Path, [String: [String: Node]], (String) -> Path)] = [
            (PublishLayout.users, fan.users, PublishLayout.userContent),
            (PublishLayout.tiers, fan.tiers, PublishLayout.tierContent),
            (PublishLayout.groups, fan.groups, PublishLayout.groupContent),
        ]
        for (parent, buckets, contentPath) in families {
            var ids = Set<JSONKey>(buckets.keys.map(JSONKey.init))
            for (id, node) in root.node(at: parent).children where node.hasChild(PublishLayout.contentKey) {
                ids.insert(JSONKey(id))
            }
            for id in ids.map(\.string).sorted(by: { compareKeys($0, $1) < 0 }) {
                emit(contentPath(id), FanOut.node(buckets[id] ?? [:]))
            }
        }
        return out
    }
}
