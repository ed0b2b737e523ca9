// WatchTests -- `canopy watch` against the real daemon binary: a publish as one redraw, daemon restarts, the
// cached feed offline, and clean failures.

import CanopyCore
import CanopyNet
import CanopyPublish
import CanopyServer
import Foundation
import Testing

@Suite struct WatchTests {
    /// The real daemon with the demo event loaded (and a fixed port when restarting it in place).
    func daemon(port: Int = 0, data: String) throws -> ServerProcess {
        try ServerProcess(
            dataDirectory: data, extraArguments: ["--demo"] + (port == 0 ? [] : ["--port", String(port)]))
    }

    func attendeeToken(_ id: String, data: String) throws -> String {
        let attendee = try #require(try DemoEvent.directory().attendee(id: id))
        return try DemoEvent.token(for: attendee, credentials: try DemoEvent.credentials(dataDirectory: data))
    }

    @Test(.timeLimit(.minutes(1))) func aPublishReachesTheWatcherAsOneRedraw() async throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try daemon(data: data)
        defer { server.terminate() }
        try DemoEvent.publish(port: server.port, admin: server.admin)
        let watch = try WatchProcess([
            "--url", "http://127.0.0.1:\(server.port)", "--token", try attendeeToken("100204", data: data), "--feed",
        ])
        let initial = try DemoEvent.expectedFeed(of: "100204")
        #expect(await eventually { watch.feedChanges == [initial] })

        // Tier 101 and group 12 and the attendee: the public, tier and user locations change in one commit.
        try DemoEvent.addPending(
            port: server.port, admin: server.admin, key: "-new1",
            item: [
                "order": -1, "type": "text", "title": "Doors open", "text": "Hall B, 8:00.", "tierIds": ["101"], "groupIds": ["12"],
                "attendeeIds": ["100204"],
            ])
        try DemoEvent.publish(port: server.port, admin: server.admin)
        #expect(await eventually { watch.feedChanges.count >= 2 })
        try DemoEvent.addPending(
            port: server.port, admin: server.admin, key: "-new2",
            item: ["order": 100, "type": "text", "text": "See you there.", "checkAll": true])
        try DemoEvent.publish(port: server.port, admin: server.admin)
        #expect(await eventually { watch.feedChanges.count >= 3 })
        #expect(watch.feedChanges == [initial, ["-new1"] + initial, ["-new1"] + initial + ["-new2"]])
        #expect(watch.blocks.last?.contains("connected · pending writes: 0") == true)
        #expect(watch.terminate() == 0)
    }

    @Test(.timeLimit(.minutes(1))) func theWatcherKeepsWorkingThroughADaemonRestart() async throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let first = try daemon(data: data)
        let port = first.port
        let admin = first.admin
        let watch = try WatchProcess([
            "--url", "http://127.0.0.1:\(port)", "--ns", "w1", "--token", admin, "--path", "status",
        ])
        let writer = HTTPClientBox(port: port, admin: admin)
        try writer.put("w1", "status", "\"before\"")
        #expect(await eventually { watch.blocks.last?.contains("\"before\"") == true })

        first.terminate()
        #expect(await eventually { watch.blocks.last?.contains("disconnected") == true })
        let second = try daemon(port: port, data: data)
        defer { second.terminate() }
        #expect(await eventually { watch.blocks.last?.contains("· connected ·") == true })
        try writer.put("w1", "status", "\"after\"")
        #expect(await eventually { watch.blocks.last?.contains("\"after\"") == true })
        #expect(watch.terminate() == 0)
    }

    @Test(.timeLimit(.minutes(1))) func aWatcherStartedOfflineShowsItsCachedFeed() async throws {
        let data = makeTemporaryDirectory()
        let cache = makeTemporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: data)
            try? FileManager.default.removeItem(atPath: cache)
        }
        let server = try daemon(data: data)
        try DemoEvent.publish(port: server.port, admin: server.admin)
        let port = server.port
        let arguments = [
            "--url", "http://127.0.0.1:\(port)", "--token", try attendeeToken("100212", data: data), "--feed",
            "--cache", cache,
        ]
        let expected = try DemoEvent.expectedFeed(of: "100212")
        let online = try WatchProcess(arguments)
        #expect(await eventually { online.feedChanges == [expected] })
        #expect(online.terminate() == 0)
        server.terminate()

        let offline = try WatchProcess(arguments)
        #expect(await eventually { offline.feedChanges == [expected] })
        #expect(offline.blocks.allSatisfy { !$0.contains("· connected ·") })
        #expect(offline.terminate() == 0)
    }

    @Test(arguments: [
        (["--feed", "--path", "a"], Int32(64), "exactly one"),
        (["--path", "a.b", "--ns", "x", "--token", "t"], 64, "--path"),
        (["--path", "a", "--token", "t"], 64, "--ns"),
        (["--feed", "--bogus"], 64, "unknown option"),
        (["--feed", "--ns", "x", "--token", "not-a-jwt"], 1, "token cannot be read"),
        (["--feed", "--token", "e30.e30.x"], 1, "no attendee claims"),
        (["--path", "a", "--ns", "x", "--token", "t", "--url", "ftp://host"], 1, "URL"),
        (["--path", "a", "--ns", "x", "--token", "t", "--url", "http://"], 1, "URL"),
    ])
    func badArgumentsFailCleanly(arguments: [String], status: Int32, message: String) throws {
        let r = try runCanopy(["watch"] + arguments)
        #expect(r.status == status)
        #expect(r.stderr.hasPrefix("canopy: error: "))
        #expect(r.stderr.contains(message))
        #expect(r.stdout.isEmpty)
    }
}

/// Admin REST writes to a spawned daemon.
struct HTTPClientBox {
    let port: Int
    let admin: String

    func put(_ namespace: String, _ path: String, _ json: String) throws {
        let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 20)
        let r = try client.request(
            "PUT", "/\(path).json?ns=\(namespace)", headers: [("Authorization", "Bearer \(admin)")],
            body: Array(json.utf8))
        #expect(r.status == 200)
    }
}
