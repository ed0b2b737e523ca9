// FeedMerger -- the feed one attendee sees: their user, tier, group and public locations merged and ordered.
//
// Steps: take every item of the user location, then the tier location, then each group location, then the
// public location; skip a key already taken (the copies of one item are identical but for the visibility lists,
// so the first, most private copy wins); keep a public item only if the visibility rule lets the attendee see
// it (public items keep their lists; an item there that cannot be parsed is kept only when it has no lists at
// all). Sort by `order` (missing or non-numeric orders last), then by key in Firebase key order.
//
// Cost: the public location is parsed and sorted once (`PublicItems`), so merging the feeds of many attendees
// costs, per attendee, a sort of their few private items plus one linear pass over the public items.

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
    ) -> [(key: String, item: Node)] {
        merge(user: user, tier: tier, groups: groups, publicItems: PublicItems(publicContent), attendee: attendee)
    }

    /// The same merge with the public location prepared once (for many attendees).
    public static func merge(
        user: Node, tier: Node, groups: [Node], publicItems: PublicItems, attendee: Attendee
    ) -> [(key: String, item: Node)] {
        entries(user: user, tier: tier, groups: groups, publicItems: publicItems, attendee: attendee)
            .map { ($0.key, $0.item) }
    }

    /// The merged feed as entries (with their sort orders).
    static func entries(user: Node, tier: Node, groups: [Node], publicItems: PublicItems, attendee: Attendee)
        -> [Entry]
    {
        var seen = Set<JSONKey>()
        var own: [Entry] = []
        var shadowed: [Int] = []  // positions of public entries replaced by a private copy
        for location in [user, tier] + groups {
            for (key, item) in location.children where seen.insert(JSONKey(key)).inserted {
                own.append(Entry(key: key, item: item, order: sortOrder(of: item)))
                if let position = publicItems.position[JSONKey(key)] { shadowed.append(position) }
            }
        }
        own.sort(by: Entry.precedes)
        shadowed.sort()
        var feed: [Entry] = []
        feed.reserveCapacity(own.count + publicItems.entries.count)
        var nextOwn = 0
        var nextShadowed = 0
        for position in publicItems.entries.indices {
            if nextShadowed < shadowed.count && shadowed[nextShadowed] == position {
                nextShadowed += 1
                continue
            }
            guard publicItems.audiences[position].admits(attendee) else { continue }
            let entry = publicItems.entries[position]
            while nextOwn < own.count && Entry.precedes(own[nextOwn], entry) {
                feed.append(own[nextOwn])
                nextOwn += 1
            }
            feed.append(entry)
        }
        feed += own[nextOwn...]
        return feed
    }

    /// A public location parsed and sorted in display order, ready to be merged into many feeds.
    public struct PublicItems: Sendable {
        /// The items in display order.
        let entries: [Entry]
        /// Who may see each entry (same positions as `entries`).
        let audiences: [Audience]
        /// Entry position by key.
        let position: [JSONKey: Int]

        /// Prepares `publicContent` (the `public/admin/content` node).
        public init(_ publicContent: Node) {
            var entries = publicContent.children.map {
                Entry(key: $0.key, item: $0.node, order: sortOrder(of: $0.node))
            }
            entries.sort(by: Entry.precedes)
            self.entries = entries
            audiences = entries.map { Audience(key: $0.key, item: $0.item) }
            var position: [JSONKey: Int] = [:]
            position.reserveCapacity(entries.count)
            for (i, entry) in entries.enumerated() { position[JSONKey(entry.key)] = i }
            self.position = position
        }
    }

    /// One item of a feed with its sort order.
    struct Entry: Sendable {
        let key: String
        let item: Node
        let order: Double

        /// Display order: `order`, then Firebase key order.
        static func precedes(_ a: Entry, _ b: Entry) -> Bool {
            a.order != b.order ? a.order < b.order : compareKeys(a.key, b.key) < 0
        }
    }

    /// Who may see a public item, decided once per item.
    enum Audience: Sendable {
        case everyone
        case nobody
        case listed(Lists)

        /// The visibility lists of a targeted item, shared by reference so checks copy nothing.
        final class Lists: Sendable {
            let item: ContentItem
            init(_ item: ContentItem) { self.item = item }
        }

        /// The visibility rule for a public item; an item that does not parse (hand-written data) is shown only
        /// when no visibility list restricts it.
        init(key: String, item: Node) {
            guard let parsed = try? ContentItem(key: key, node: item) else {
                let open = ContentItem.visibilityFields.allSatisfy { item.child($0).isEmpty }
                self = open ? .everyone : .nobody
                return
            }
            if parsed.isCSV {
                self = .nobody
            } else {
                self = parsed.isGlobal ? .everyone : .listed(Lists(parsed))
            }
        }

        func admits(_ attendee: Attendee) -> Bool {
            switch self {
            case .everyone: true
            case .nobody: false
            case .listed(let lists): lists.item.isVisible(to: attendee)
            }
        }
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
