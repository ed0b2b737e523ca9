// FeedStreamTests -- PersonalizedContentFeed against a scripted server: locations, first value, bursts, refusal.

import CanopyCore
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

@testable import CanopyClient

@Suite struct FeedStreamTests {
    static let user = "/private/adminable/users/u1/content"
    static let tier = "/private/adminable/tiers/101/content"
    static let publicContent = "/public/admin/content"
    static let group = "/private/adminable/groups/11/content"

    /// A database connected to a scripted server and a feed for attendee u1 (tier 101, group 11).
    func connectedFeed() async throws -> (Database, ScriptedConnection, PersonalizedContentFeed) {
        let network = ScriptedNetwork(accepting: true)
        let db = try scriptedDatabase(network)
        let connection = try #require(await network.connect(1))
        db.settle()
        let feed = try PersonalizedContentFeed(db: db, userId: "u1", tierId: "101", groups: ["11", "11"])
        return (db, connection, feed)
    }

    func answer(_ connection: ScriptedConnection, _ path: String, _ data: JSONValue) {
        connection.push("d", ["p": .string(path), "d": data])
        connection.replyTo("q", path: path)
    }

    @Test func listensToUserTierPublicAndGroupLocations() async throws {
        let (db, connection, feed) = try await connectedFeed()
        let log = FeedRecorder(feed)
        #expect(await poll { connection.actions.filter { $0 == "q" }.count == 4 })
        let paths = Set(connection.requests.filter { $0["a"] == "q" }.compactMap { $0["b"]?["p"]?.stringValue })
        #expect(paths == [Self.user, Self.tier, Self.publicContent, Self.group])
        log.cancel()
        await db.close()
    }

    @Test func theFirstFeedWaitsForEveryLocation() async throws {
        let (db, connection, feed) = try await connectedFeed()
        let log = FeedRecorder(feed)
        #expect(await poll { connection.actions.filter { $0 == "q" }.count == 4 })
        answer(connection, Self.user, ["a": ["order": 2, "title": "for u1"]])
        answer(connection, Self.tier, nil)
        answer(
            connection, Self.publicContent,
            ["p": ["order": 3, "groupIds": [11]], "q": ["order": 1, "groupIds": [12]]])
        // Once the client's queue has handled the three answers, a feed yielded too early is already in the
        // stream's buffer, ahead of any later one: the check below sees it first, without waiting for time to pass.
        db.settle()
        answer(connection, Self.group, ["g": ["order": 1]])
        #expect(await poll { !log.all.isEmpty })
        // Had a feed been yielded before the group location answered, it would lack "g".
        #expect(log.keys.first == ["g", "a", "p"])
        log.cancel()
        await db.close()
    }

    @Test func eventsDeliveredTogetherGiveOneUpdate() async throws {
        let (db, connection, feed) = try await connectedFeed()
        let log = FeedRecorder(feed)
        #expect(await poll { connection.actions.filter { $0 == "q" }.count == 4 })
        for path in [Self.user, Self.tier, Self.publicContent, Self.group] { answer(connection, path, nil) }
        #expect(await poll { log.all.count == 1 })
        #expect(log.keys == [[]])

        // One publish: a tier item (public copy kept for a group, private copy for the tier) and a user item. Its
        // frames arrive back-to-back, as from one socket read: queued while the client's queue is held, so none
        // can be overtaken by the feed's barrier (sent one by one from this thread, they sometimes were).
        db.whileQueueHeld {
            connection.push(
                "d", ["p": .string(Self.publicContent), "d": ["t": ["order": 1, "tierIds": [101], "groupIds": [12]]]])
            connection.push("d", ["p": .string(Self.tier), "d": ["t": ["order": 1]]])
            connection.push("d", ["p": .string(Self.user), "d": ["u": ["order": 2]]])
        }
        #expect(await poll { log.all.count >= 2 })
        // A later, separate change: once it shows, every update of the burst has been seen.
        connection.push("d", ["p": .string(Self.group), "d": ["z": ["order": 9]]])
        #expect(await poll { log.all.count >= 3 })
        #expect(log.keys == [[], ["t", "u"], ["t", "u", "z"]])
        #expect(log.all[1][0].fields == ["order": 1])
        log.cancel()
        await db.close()
    }

    @Test func aRefusedLocationEndsTheFeedWithTheError() async throws {
        let (db, connection, feed) = try await connectedFeed()
        let log = FeedRecorder(feed)
        #expect(await poll { connection.actions.filter { $0 == "q" }.count == 4 })
        connection.replyTo("q", path: Self.group, "permission_denied")
        #expect(await poll { log.error != nil })
        #expect(log.error as? ClientError == .permissionDenied(path: Self.group))
        #expect(log.all.isEmpty)
        await db.close()
    }

    @Test func closingTheDatabaseEndsTheFeed() async throws {
        let (db, connection, feed) = try await connectedFeed()
        let log = FeedRecorder(feed)
        #expect(await poll { connection.actions.filter { $0 == "q" }.count == 4 })
        await db.close()
        await #expect(throws: ClientError.closed) { try await feed.currentItems() }
        #expect(log.error == nil)
    }

    @Test func invalidIdsAreRefused() throws {
        let db = try scriptedDatabase(ScriptedNetwork())
        #expect(throws: ClientError.self) {
            try PersonalizedContentFeed(db: db, userId: "a/b", tierId: "101", groups: [])
        }
        #expect(throws: ClientError.self) {
            try PersonalizedContentFeed(db: db, userId: "u", tierId: "101", groups: ["g.1"])
        }
    }
}
