// FanOut -- where each published item is copied: the public location, users, tiers and (isolated) groups.
//
// Rules (issue 5 "Fan-out", seed semantics):
//   - global items (checkAll, or no list names anyone) → public, as stored;
//   - items with any groupIds → public as stored (clients filter by group), or, with isolateGroups, a copy
//     without the lists to each named group;
//   - each tier in tierIds and each attendee in attendeeIds → a copy without the lists;
//   - CSV items → nothing themselves; each rawData row → its named attendees under `<item key><row key>`.
// Every item is visited once and every copy is placed once: O(items + list entries + rows).

import CanopyCore

/// The derived content of one publish, location by location.
public struct FanOut: Sendable, Equatable {
    /// `public/admin/content`: item key → item as stored (visibility lists kept, so clients can filter).
    public var publicContent: [String: Node] = [:]
    /// `private/adminable/users/<userId>/content`: user id → item key → copy without visibility lists.
    public var users: [String: [String: Node]] = [:]
    /// `private/adminable/tiers/<tierId>/content`: tier id → item key → copy without visibility lists.
    public var tiers: [String: [String: Node]] = [:]
    /// `private/adminable/groups/<groupId>/content`, only with `isolateGroups`: group id → item key → copy.
    public var groups: [String: [String: Node]] = [:]

    /// An empty fan-out.
    public init() {}

    /// Every derived location that receives something, with its complete `content` node.
    public func locations() -> [(path: Path, node: Node)] {
        var out: [(path: Path, node: Node)] = []
        out.reserveCapacity(1 + users.count + tiers.count + groups.count)
        if !publicContent.isEmpty {
            out.append((PublishLayout.publicContent, FanOut.node(publicContent)))
        }
        for (id, content) in users { out.append((PublishLayout.userContent(id), FanOut.node(content))) }
        for (id, content) in tiers { out.append((PublishLayout.tierContent(id), FanOut.node(content))) }
        for (id, content) in groups {
            out.append((PublishLayout.groupContent(id), FanOut.node(content)))
        }
        return out
    }

    /// How many derived locations receive something.
    public var locationCount: Int { (publicContent.isEmpty ? 0 : 1) + users.count + tiers.count + groups.count }

    /// The `content` node holding `items`.
    static func node(_ items: [String: Node]) -> Node {
        Node(children: items.map { (key: $0.key, node: $0.value) })
    }

    /// Places `item` as stored in the public location.
    static func placePublic(_ item: ContentItem, in out: inout FanOut) throws(PublishError) {
        guard out.publicContent.updateValue(item.raw, forKey: item.key) == nil else {
            throw PublishError(.keyCollision, key: item.key, field: nil)
        }
    }

    /// Places `copy` under `key` in bucket `id` of `buckets`; two copies with one key in one bucket is an error.
    static func place(
        _ copy: Node, key: String, in buckets: inout [String: [String: Node]], id: String, item: String,
        field: String?
    ) throws(PublishError) {
        let previous = buckets[id, default: [:]].updateValue(copy, forKey: key)
        // Keys are byte-distinct; only canonically equivalent spellings can meet here.
        guard previous == nil else { throw PublishError(.keyCollision, key: item, field: field) }
    }
}

extension PublishEngine {
    /// Computes where every item of `pending` goes.
    ///
    /// - Parameters:
    ///   - pending: The content to publish (`pendingContent`, or a history snapshot): item key → item.
    ///   - settings: The event's options (`isolateGroups`).
    /// - Returns: The buckets; copies keep the item's key and `order`.
    /// - Throws: `PublishError` for the first invalid item (key and field named), or when a CSV row's key equals
    ///   another item's or row's key.
    ///   - cache: Items parsed by the previous publish, reused when their nodes are unchanged (see `ParsedItems`).
    public static func fanOut(pending: Node, settings: PublishSettings, cache: ParsedItems? = nil)
        throws(PublishError) -> FanOut
    {
        try fanOut(items: parseItems(pending, cache: cache), settings: settings)
    }

    /// Parses every item of `content`, in key order (through `cache` when given; it then keeps these items).
    public static func parseItems(_ content: Node, cache: ParsedItems? = nil) throws(PublishError) -> [ContentItem] {
        if content.isLeaf { throw PublishError(.contentNotObject) }
        var items: [ContentItem] = []
        items.reserveCapacity(content.childCount)
        guard let cache else {
            for (key, node) in content.children { items.append(try ContentItem(key: key, node: node)) }
            return items
        }
        var next: [ObjectIdentifier: ContentItem] = [:]
        next.reserveCapacity(content.childCount)
        for (key, node) in content.children { items.append(try cache.item(key: key, node: node, into: &next)) }
        cache.replace(with: next)
        return items
    }

    /// The fan-out of already parsed items.
    public static func fanOut(items: [ContentItem], settings: PublishSettings) throws(PublishError)
        -> FanOut
    {
        var out = FanOut()
        var usedKeys = Set<JSONKey>(items.map { JSONKey($0.key) })
        for item in items {
            if item.isCSV {
                for row in item.rawData {
                    let field = "rawData/\(row.index)"
                    guard usedKeys.insert(JSONKey(row.copyKey)).inserted else {
                        throw PublishError(.keyCollision, key: item.key, field: field)
                    }
                    for id in row.attendeeIds {
                        try FanOut.place(
                            row.copy, key: row.copyKey, in: &out.users, id: id, item: item.key, field: field)
                    }
                }
                continue
            }
            if item.isGlobal {
                try FanOut.placePublic(item, in: &out)
                continue
            }
            let copy = item.privateCopy
            if !item.groupIds.isEmpty {
                if settings.isolateGroups {
                    for id in item.groupIds {
                        try FanOut.place(
                            copy, key: item.key, in: &out.groups, id: id, item: item.key, field: nil)
                    }
                } else {
                    try FanOut.placePublic(item, in: &out)
                }
            }
            for id in item.tierIds {
                try FanOut.place(copy, key: item.key, in: &out.tiers, id: id, item: item.key, field: nil)
            }
            for id in item.attendeeIds {
                try FanOut.place(copy, key: item.key, in: &out.users, id: id, item: item.key, field: nil)
            }
        }
        return out
    }
}
