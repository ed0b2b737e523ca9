// FeedMerger -- the feed one attendee sees: their user, tier, group and public locations merged and ordered.
//
// Steps: take every item of the user location, then the tier location, then each group location, then the
// public location; skip a key already taken (the copies of one item are identical but for the visibility lists,
// so the first, most private copy wins); keep a public item only if the visibility rule lets the attendee see
// it (public items keep their lists; an item there that cannot be parsed is kept only when it has no lists at
// all). Sort by `order` (missing or non-numeric orders last), then by key in Firebase key order.

import CanopyCore

/// Merges an attendee's locations into their feed; shared by the engine, the server's tests and the clients.
public enum FeedMerger {
    /// The attendee's feed, in display order.
    ///
    /// - Parameters:
    ///   - user: The `content` node of `private/adminable/users/<id>`.
    ///   - tier: The `content` node of `private/adminable/tiers/<tierId>`.
    ///   - publicContent: The `public/admin/content` node.
    ///   - groups: The `content` nodes of the attendee's isolated group locations (empty when not isolated).
    ///   - attendee: Whose feed it is; filters the public items.
    /// - Returns: (key, item) pairs, each key once, ordered by `order` then key.
    public static func merge(
        user: Node, tier: Node, publicContent: Node, groups: [Node], attendee: Attendee
    )
        -> [(key: String, item: Node)]
    {
        var seen = Set<JSONKey>()
        var feed: [(key: String, item: Node, order: Double)] = []
        func take(_ key: String, _ item: Node) {
            guard seen.insert(JSONKey(key)).inserted else { return }
            feed.append((key, item, sortOrder(of: item)))
        }
        for location in [user, tier] + groups {
            for (key, item) in location.children { take(key, item) }
        }
        for (key, item) in publicContent.children
        where publicItemVisible(key: key, item: item, to: attendee) {
            take(key, item)
        }
        feed.sort { a, b in
            if a.order != b.order { return a.order < b.order }
            return compareKeys(a.key, b.key) < 0
        }
        return feed.map { ($0.key, $0.item) }
    }

    /// Whether a public item is shown to `attendee` under the visibility rule.
    static func publicItemVisible(key: String, item: Node, to attendee: Attendee) -> Bool {
        if let parsed = try? ContentItem(key: key, node: item) { return parsed.isVisible(to: attendee) }
        // Not a valid item (hand-written data): show it only if nothing restricts it.
        return ContentItem.visibilityFields.allSatisfy { item.child($0).isEmpty }
    }

    /// The sort key: the numeric `order`, or +infinity when missing or not a number.
    static func sortOrder(of item: Node) -> Double {
        switch item.child("order").value {
        case .int(let i)?: return Double(i)
        case .double(let d)?: return d
        default: return .infinity
        }
    }
}
