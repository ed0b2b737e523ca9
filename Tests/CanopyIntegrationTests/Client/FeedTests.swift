// FeedTests -- PersonalizedContentFeed against the real server with minted attendee tokens: the demo event's
// expected feeds (groups isolated or not), one update per publish, the cached feed offline.

import CanopyClient
import CanopyCore
import CanopyPublish
import CanopyServer
import CanopyTestSupport
import Foundation
import Testing

@Suite struct FeedTests {
    func eventServer() throws -> InProcessServer {
        try InProcessServer { $0.rulesFile = rulesFile("personalized-content.rules.json") }
    }

    @Test(.timeLimit(.minutes(2)), arguments: [false, true])
    func everyDemoAttendeeSeesExactlyTheExpectedFeed(isolateGroups: Bool) async throws {
        let server = try eventServer()
        defer { server.stop() }
        try DemoEvent.loadAndPublish(port: server.port, admin: server.admin, isolateGroups: isolateGroups)
        for attendee in try DemoEvent.directory().attendees {
            let token = try DemoEvent.token(for: attendee, credentials: server.daemon.credentials)
            let db = try clientDatabase(port: server.port, namespace: DemoEvent.namespace, token: token)
            let feed = try PersonalizedContentFeed(
                db: db, userId: attendee.id, tierId: attendee.tierId, groups: attendee.groupIds)
            let items = try await feed.currentItems()
            #expect(items.map(\.key) == (try DemoEvent.expectedFeed(of: attendee.id)), "feed of \(attendee.id)")
            #expect(items.allSatisfy { $0.fields["attendeeIds"] == nil && $0.fields["rawData"] == nil })
            await db.close()
        }
    }

    @Test(.timeLimit(.minutes(1))) func aPublishReachesTheAttendeeAsOneUpdate() async throws {
        let server = try eventServer()
        defer { server.stop() }
        try DemoEvent.loadAndPublish(port: server.port, admin: server.admin)
        let attendee = try #require(try DemoEvent.directory().attendee(id: "100201"))
        let token = try DemoEvent.token(for: attendee, credentials: server.daemon.credentials)
        let db = try clientDatabase(port: server.port, namespace: DemoEvent.namespace, token: token)
        let feed = try PersonalizedContentFeed(db: db, attendee: attendee)
        let log = FeedRecorder(feed)
        let initial = try DemoEvent.expectedFeed(of: "100201")
        #expect(await eventually { log.keys == [initial] })

        // Targeted at the attendee's tier, group and id: one commit changes the public, tier and user locations.
        try DemoEvent.addPending(
            port: server.port, admin: server.admin, key: "-new1",
            item: [
                "order": -1, "type": "text", "title": "Doors open", "text": "Hall B, 8:00.", "tierIds": ["101"], "groupIds": ["11"],
                "attendeeIds": ["100201"],
            ])
        try DemoEvent.publish(port: server.port, admin: server.admin)
        #expect(await eventually { log.keys.count >= 2 })
        // A second, separate publish: once it shows, every update of the first one has been seen.
        try DemoEvent.addPending(
            port: server.port, admin: server.admin, key: "-new2",
            item: ["order": 100, "type": "text", "text": "See you there.", "checkAll": true])
        try DemoEvent.publish(port: server.port, admin: server.admin)
        #expect(await eventually { log.keys.count >= 3 })
        #expect(log.keys == [initial, ["-new1"] + initial, ["-new1"] + initial + ["-new2"]])
        #expect(log.last?.first?["title"] == "Doors open")
        #expect(log.last?.first?["tierIds"] == nil)  // the private copy, not the public one
        log.cancel()
        await db.close()
    }

    @Test(.timeLimit(.minutes(1))) func aClientRestartedOfflineShowsItsCachedFeed() async throws {
        let server = try eventServer()
        try DemoEvent.loadAndPublish(port: server.port, admin: server.admin, isolateGroups: true)
        let port = server.port
        let attendee = try #require(try DemoEvent.directory().attendee(id: "100211"))
        let token = try DemoEvent.token(for: attendee, credentials: server.daemon.credentials)
        let cache = URL(fileURLWithPath: makeTemporaryDirectory())
        defer { try? FileManager.default.removeItem(at: cache) }
        let online = try clientDatabase(port: port, namespace: DemoEvent.namespace, token: token, cache: cache)
        let expected = try DemoEvent.expectedFeed(of: attendee.id)
        #expect(try await PersonalizedContentFeed(db: online, attendee: attendee).currentItems().map(\.key) == expected)
        await online.close()
        server.stop()

        // The daemon is gone: the restarted client answers from its cache at once.
        let offline = try clientDatabase(port: port, namespace: DemoEvent.namespace, token: token, cache: cache)
        let feed = try PersonalizedContentFeed(
            db: offline, userId: attendee.id, tierId: attendee.tierId, groups: attendee.groupIds)
        #expect(try await feed.currentItems().map(\.key) == expected)
        #expect(offline.connectionState != .connected)
        await offline.close()
    }
}
