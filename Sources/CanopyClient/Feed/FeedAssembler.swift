// FeedAssembler -- the attendee feed's state between events: the last value of every location, merged on demand.
//
// Pure: the feed stream feeds it each location's values and asks for the feed at the end of every burst of
// events. It answers nothing until every location has delivered a first value (no half-initialised feed) and
// nothing when the merged feed did not change (a burst that only touched another attendee's data, or a private
// copy arriving after the public one with the same visible result).

import CanopyCore
import CanopyPublish

/// Collects location values and yields the merged feed once per burst.
struct FeedAssembler: Sendable {
    /// Whose feed it is (filters the public items).
    let attendee: Attendee
    /// The last value of each location: user, tier, public, then one per group; nil until the first arrives.
    private var nodes: [Node?]
    private var changed = false
    private var lastFeed: [FeedItem]?

    /// The location indexes of the fixed locations; groups follow `publicContent`.
    static let user = 0
    static let tier = 1
    static let publicContent = 2

    /// Creates an assembler for `attendee` with `attendee.groupIds.count` group locations.
    init(attendee: Attendee) {
        self.attendee = attendee
        nodes = Array(repeating: nil, count: 3 + attendee.groupIds.count)
    }

    /// The number of locations the feed listens to.
    var locationCount: Int { nodes.count }

    /// Whether every location has delivered a value.
    var isComplete: Bool { nodes.allSatisfy { $0 != nil } }

    /// Records the value of location `index`.
    mutating func receive(_ node: Node, at index: Int) {
        precondition(nodes.indices.contains(index), "feed location out of range")
        if nodes[index] != node {
            nodes[index] = node
            changed = true
        }
    }

    /// The end of a burst of events: the feed to show, or nil when it is incomplete or unchanged.
    mutating func endOfBurst() -> [FeedItem]? {
        guard changed, isComplete else { return nil }
        changed = false
        let feed = Self.merge(
            user: nodes[Self.user]!, tier: nodes[Self.tier]!, publicContent: nodes[Self.publicContent]!,
            groups: nodes[(Self.publicContent + 1)...].map { $0! }, attendee: attendee)
        guard feed != lastFeed else { return nil }
        lastFeed = feed
        return feed
    }

    /// The merged feed of these location values (`FeedMerger`), as feed items.
    static func merge(user: Node, tier: Node, publicContent: Node, groups: [Node], attendee: Attendee) -> [FeedItem] {
        FeedMerger.merge(user: user, tier: tier, publicContent: publicContent, groups: groups, attendee: attendee)
            .map { FeedItem(key: $0.key, fields: $0.item.json(export: false)) }
    }
}
