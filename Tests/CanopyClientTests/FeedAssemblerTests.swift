// FeedAssemblerTests -- the feed's state between events: nothing until complete, one feed per changed burst.

import CanopyCore
import CanopyPublish
import Testing

@testable import CanopyClient

@Suite struct FeedAssemblerTests {
    let attendee = Attendee(id: "u1", tierId: "101", groupIds: ["11"])

    func node(_ json: JSONValue) throws -> Node { try Node.from(json: json) }

    @Test func nothingIsYieldedUntilEveryLocationHasAValue() throws {
        var assembler = FeedAssembler(attendee: attendee)
        #expect(assembler.locationCount == 4)
        assembler.receive(try node(["a": ["order": 1]]), at: FeedAssembler.user)
        assembler.receive(.empty, at: FeedAssembler.tier)
        assembler.receive(.empty, at: FeedAssembler.publicContent)
        #expect(assembler.endOfBurst() == nil)
        #expect(!assembler.isComplete)
        assembler.receive(try node(["g": ["order": 0]]), at: 3)
        #expect(assembler.endOfBurst()?.map(\.key) == ["g", "a"])
    }

    @Test func anUnchangedFeedIsNotYieldedAgain() throws {
        var assembler = FeedAssembler(attendee: attendee)
        for index in 0..<assembler.locationCount { assembler.receive(.empty, at: index) }
        #expect(assembler.endOfBurst() == [])
        #expect(assembler.endOfBurst() == nil)
        // A public item for another group changes a location but not this attendee's feed.
        assembler.receive(try node(["x": ["order": 1, "groupIds": [12]]]), at: FeedAssembler.publicContent)
        #expect(assembler.endOfBurst() == nil)
        assembler.receive(
            try node(["y": ["order": 2, "groupIds": [11], "title": "hi"]]), at: FeedAssembler.publicContent)
        let burst = assembler.endOfBurst()
        let feed = try #require(burst)
        #expect(feed.map(\.key) == ["y"])
        #expect(feed[0]["title"] == "hi")
        #expect(feed[0].order == 2)
    }

    @Test func thePrivateCopyWinsOverThePublicOne() throws {
        var assembler = FeedAssembler(attendee: attendee)
        for index in 0..<assembler.locationCount { assembler.receive(.empty, at: index) }
        assembler.receive(
            try node(["k": ["order": 1, "type": "text", "groupIds": [11], "tierIds": [101]]]),
            at: FeedAssembler.publicContent)
        assembler.receive(try node(["k": ["order": 1, "type": "text"]]), at: FeedAssembler.tier)
        let burst = assembler.endOfBurst()
        let feed = try #require(burst)
        #expect(feed == [FeedItem(key: "k", fields: ["order": 1, "type": "text"])])
        #expect(feed[0].type == "text")
    }
}
