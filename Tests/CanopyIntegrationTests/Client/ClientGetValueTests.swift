// ClientGetValueTests -- getValue answers from the cache when offline and gives up on what it cannot know.

import CanopyClient
import CanopyCore
import CanopyServer
import Foundation
import Testing

@Suite struct ClientGetValueTests {
    /// Online it reads through; with the daemon gone it answers a cached location at once and times out (rather
    /// than waiting forever, like Firebase's `getData`) on a location it never saw.
    @Test(.timeLimit(.minutes(1))) func offlineGetValueUsesTheCacheAndTimesOutWithout() async throws {
        let server = try InProcessServer()
        let port = server.port
        let cache = URL(fileURLWithPath: makeTemporaryDirectory())
        defer { try? FileManager.default.removeItem(at: cache) }
        let online = try clientDatabase(port: port, namespace: "get1", token: server.admin, cache: cache)
        try await online.ref("seen").setValue(["title": "cached"]).synced()
        #expect(try await online.ref("seen").getValue(timeout: 10).value == ["title": "cached"])
        await online.close()
        server.stop()

        let offline = try clientDatabase(port: port, namespace: "get1", token: server.admin, cache: cache)
        let cached = try await offline.ref("seen").getValue(timeout: 10)
        #expect(cached.value == ["title": "cached"])
        #expect(cached.fromCache)
        await #expect(throws: ClientError.timedOut(path: "/never")) {
            _ = try await offline.ref("never").getValue(timeout: 0.3)
        }
        await offline.close()
    }
}
