// FeedMergerTests -- merging an attendee's locations: duplicates once, public filtered, ordered by order then key.

import CanopyCore
import CanopyPublish
import Testing

@Suite struct FeedMergerTests {
    let attendee = Attendee(id: "u", tierId: "101", groupIds: ["11"])

    @Test func duplicatesAppearOnceAndThePrivateCopyWins() {
        let user = Node.literal(["a": ["order": 1, "title": "user copy"]])
        let tier = Node.literal(["a": ["order": 1, "title": "tier copy"], "b": ["order": 0]])
        let publicContent = Node.literal(["b": ["order": 0, "groupIds": [11]], "c": ["order": 2, "checkAll": true]])
        let feed = FeedMerger.merge(
            user: user, tier: tier, publicContent: publicContent, groups: [], attendee: attendee)
        #expect(feed.map(\.key) == ["b", "a", "c"])
        #expect(feed[1].item.child("title").value == .string("user copy"))
        #expect(!feed[0].item.hasChild("groupIds"))
    }

    @Test func publicItemsAreFilteredByTheVisibilityRule() {
        let publicContent = Node.literal([
            "mine": ["order": 0, "groupIds": [11]],
            "other": ["order": 0, "groupIds": [12]],
            "tier": ["order": 0, "tierIds": [101], "groupIds": [99]],
            "all": ["order": 0],
            "broken": ["title": "no order", "groupIds": [11]],
            "brokenOpen": ["title": "no order, no lists"],
        ])
        let feed = FeedMerger.merge(
            user: .empty, tier: .empty, publicContent: publicContent, groups: [], attendee: attendee)
        #expect(feed.map(\.key) == ["all", "mine", "tier", "brokenOpen"])
    }

    @Test func groupLocationsAreMergedUnfiltered() {
        let group = Node.literal(["g": ["order": 5]])
        let feed = FeedMerger.merge(
            user: .empty, tier: .empty, publicContent: .empty, groups: [group], attendee: attendee)
        #expect(feed.map(\.key) == ["g"])
    }

    @Test func tiesInOrderFallBackToFirebaseKeyOrder() {
        let user = Node.literal(["b": ["order": 1], "10": ["order": 1], "2": ["order": 1], "a": ["order": 0.5]])
        let feed = FeedMerger.merge(user: user, tier: .empty, publicContent: .empty, groups: [], attendee: attendee)
        #expect(feed.map(\.key) == ["a", "2", "10", "b"])
    }
}
