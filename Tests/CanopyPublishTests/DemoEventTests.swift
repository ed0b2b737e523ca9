// DemoEventTests -- the seed event publishes to exactly the buckets and feeds of expected-feeds.json.

import CanopyCore
import CanopyPublish
import Testing

@Suite struct DemoEventTests {
    @Test func fanOutMatchesExpectedBuckets() throws {
        let root = try Seed.event()
        let fan = try PublishEngine.fanOut(
            pending: root.node(at: PublishLayout.pendingContent), settings: PublishSettings(root: root))
        let expected = try Seed.expectedBuckets()
        #expect(bucketKeys(fan) == expected.mapValues { $0.sorted() })
        #expect(fan.groups.isEmpty)
    }

    @Test func everyAttendeeSeesTheExpectedFeedAfterPublishing() throws {
        let root = try Seed.event()
        let published = root.applying(
            try PublishEngine.publishWrites(root: root, now: 1_000, publisher: "admin"))
        let expected = try Seed.expectedFeeds()
        let directory = try Seed.directory()
        #expect(directory.attendees.count == 12)
        for attendee in directory.attendees {
            let feed = FeedMerger.merge(
                user: published.node(at: PublishLayout.userContent(attendee.id)),
                tier: published.node(at: PublishLayout.tierContent(attendee.tierId)),
                publicContent: published.node(at: PublishLayout.publicContent),
                groups: [], attendee: attendee)
            #expect(feed.map(\.key) == expected[attendee.id], "feed of \(attendee.id)")
            #expect(
                PublishEngine.feed(root: published, attendee: attendee, pending: false).map(\.key)
                    == expected[attendee.id])
            #expect(
                PublishEngine.feed(root: root, attendee: attendee, pending: true).map(\.key)
                    == expected[attendee.id])
        }
    }

    @Test func isolatedGroupsKeepTheFeedsAndEmptyPublicOfGroupItems() throws {
        let root = try Seed.event().setting(
            Node(leaf: .bool(true)), at: PublishLayout.settings.child("isolateGroups"))
        let published = root.applying(
            try PublishEngine.publishWrites(root: root, now: 1_000, publisher: nil))
        #expect(
            published.node(at: PublishLayout.publicContent).childKeys.sorted()
                == ["-OKzH8K4UyBOOjPU9VtT", "-OKzKOoLaQT_8iMGWeID"])
        #expect(
            published.node(at: PublishLayout.groupContent("11")).childKeys == ["-OKzLxWMVQ3RPzTjHH0q"])
        #expect(
            published.node(at: PublishLayout.groupContent("13")).childKeys == ["-OKzTwcbS5X2kgnWTKyi"])
        let expected = try Seed.expectedFeeds()
        for attendee in try Seed.directory().attendees {
            #expect(
                PublishEngine.feed(root: published, attendee: attendee, pending: false).map(\.key)
                    == expected[attendee.id])
        }
    }

    @Test func privateCopiesDropTheListsAndPublicKeepsThem() throws {
        let root = try Seed.event()
        let published = root.applying(
            try PublishEngine.publishWrites(root: root, now: 1_000, publisher: nil))
        let tierCopy = published.node(at: PublishLayout.tierContent("102")).child(
            "-OKzQtzYvQphPqYvJ7GU")
        #expect(!tierCopy.hasChild("tierIds") && !tierCopy.hasChild("groupIds"))
        #expect(tierCopy.child("order").value == .int(4))
        let publicCopy = published.node(at: PublishLayout.publicContent).child("-OKzQtzYvQphPqYvJ7GU")
        #expect(publicCopy.hasChild("groupIds") && publicCopy.hasChild("tierIds"))
        let row = published.node(at: PublishLayout.userContent("100205")).child("-OKzSJiMqgBxQZV5-STt1")
        #expect(row.child("type").value == .string("text"))
        #expect(!row.hasChild("attendeeIds"))
        #expect(row.hasChild("email"))
    }
}
