// PublishTests -- the publish engine through the real server: every demo attendee's feed, read as that attendee
// with a real token; atomicity as seen by a subscriber; admin API errors.

import CanopyCore
import CanopyNet
import CanopyPublish
import CanopyServer
import Foundation
import Synchronization
import Testing

/// A file under the package's `seed/` directory.
func seedFile(_ name: String) -> String {
    URL(fileURLWithPath: rulesFile("x")).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("seed/\(name)").path
}

@Suite struct PublishTests {
    static let ns = "canopy-demo-summit"

    /// Starts a server with the event rules, imports the demo event, optionally isolating groups.
    func withDemo(isolateGroups: Bool, _ body: (InProcessServer, HTTPClient) throws -> Void) throws {
        try withServer(configure: { $0.rulesFile = rulesFile("personalized-content.rules.json") }) { server in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let document = try ExportDocument.parse(Array(try String(contentsOfFile: seedFile("canopy-demo-summit.json"), encoding: .utf8).utf8))
            var tree: [UInt8] = []
            document.data.json(export: true).write(into: &tree)
            #expect(try c.request("PUT", "/.json?ns=\(Self.ns)", headers: admin, body: tree).status == 200)
            if isolateGroups {
                #expect(try c.json("PUT", "/private/admin/settings/isolateGroups.json?ns=\(Self.ns)", "true", headers: admin).status == 200)
            }
            try body(server, c)
        }
    }

    func publish(_ server: InProcessServer, _ c: HTTPClient, query: String = "") throws -> (status: Int, json: JSONValue?, response: HTTPClientResponse) {
        try c.json("POST", "/.canopy/publish?ns=\(Self.ns)\(query)", headers: [("Authorization", "Bearer \(server.admin)")])
    }

    @Test(arguments: [false, true])
    func everyAttendeeSeesExactlyTheirFeed(isolateGroups: Bool) throws {
        let expected = try JSONValue.parse(try String(contentsOfFile: seedFile("expected-feeds.json"), encoding: .utf8))
        let directory = try AttendeeDirectory.parse(
            try JSONValue.parse(try String(contentsOfFile: seedFile("attendees.json"), encoding: .utf8)))
        try withDemo(isolateGroups: isolateGroups) { server, c in
            #expect(try publish(server, c).status == 200)
            for attendee in directory.attendees {
                let claims: JSONValue = [
                    "uid": .string(attendee.id), "userId": .string(attendee.id), "tierId": .string(attendee.tierId),
                    "groups": .object(attendee.groupIds.map { JSONMember($0, true) }), "ns": .string(Self.ns),
                ]
                let token = try server.daemon.credentials.mint(claims: claims, ttlSeconds: 600, now: SystemClock().nowMilliseconds())
                func read(_ path: String) throws -> Node {
                    let r = try c.request("GET", "/\(path).json?ns=\(Self.ns)&auth=\(token)")
                    #expect(r.status == 200, "attendee \(attendee.id) must read \(path)")
                    return try Node.from(json: try JSONValue.parse(r.body))
                }
                let user = try read("private/adminable/users/\(attendee.id)/content")
                let tier = try read("private/adminable/tiers/\(attendee.tierId)/content")
                let publicContent = try read("public/admin/content")
                var groups: [Node] = []
                if isolateGroups {
                    for group in attendee.groupIds { groups.append(try read("private/adminable/groups/\(group)/content")) }
                }
                let feed = FeedMerger.merge(
                    user: user, tier: tier, publicContent: publicContent, groups: groups, attendee: attendee)
                let want = expected["feeds"]?[attendee.id]?.arrayValue?.compactMap(\.stringValue) ?? []
                #expect(feed.map(\.key) == want, "feed of \(attendee.id)")
                // Locations this attendee must not read.
                for other in directory.attendees where other.id != attendee.id {
                    let r = try c.request("GET", "/private/adminable/users/\(other.id).json?ns=\(Self.ns)&auth=\(token)")
                    #expect(r.status == 401)
                    if other.tierId != attendee.tierId {
                        let t = try c.request("GET", "/private/adminable/tiers/\(other.tierId).json?ns=\(Self.ns)&auth=\(token)")
                        #expect(t.status == 401)
                    }
                }
                for group in ["11", "12", "13", "14"] where !attendee.groupIds.contains(group) {
                    let r = try c.request("GET", "/private/adminable/groups/\(group).json?ns=\(Self.ns)&auth=\(token)")
                    #expect(r.status == 401)
                }
                let admin = try c.request("GET", "/private/admin.json?ns=\(Self.ns)&auth=\(token)")
                #expect(admin.status == 401)
            }
        }
    }

    /// The answer to a publish: its fields in order, each location the publish changed once, and its time.
    @Test func aPublishAnswersWithTheLocationsItChanged() throws {
        try withDemo(isolateGroups: false) { server, c in
            let r = try publish(server, c)
            #expect(r.status == 200)
            let answer = try #require(r.json)
            #expect(answer.members?.map(\.key) == ["ok", "action", "at", "changedLocations", "lastPublishedAt"])
            #expect(answer["ok"] == true)
            #expect(answer["action"] == "publish")
            let at = try #require(answer["at"]?.int64Value)
            #expect(answer["lastPublishedAt"]?.int64Value == at)
            let locations = try #require(answer["changedLocations"]?.arrayValue).compactMap(\.stringValue)
            #expect(Set(locations).count == locations.count, "each location once: \(locations)")
            for location in ["/public/admin/content", "/private/admin/content", "/private/admin/lastPublishedAt"] {
                #expect(locations.contains(location), "\(location) in \(locations)")
            }
            #expect(locations.contains { $0.hasPrefix("/private/adminable/users/") && $0.hasSuffix("/content") })
            for location in locations { #expect((try? Path(parsing: location)) != nil, "\(location)") }
            // Published again unchanged: only the time and the history move.
            let again = try #require(try publish(server, c).json)
            let moved = try #require(again["changedLocations"]?.arrayValue).compactMap(\.stringValue)
            #expect(moved.contains("/private/admin/lastPublishedAt"))
            #expect(!moved.contains("/public/admin/content"), "\(moved)")
        }
    }

    @Test func ifMatchRevertAndErrors() throws {
        try withDemo(isolateGroups: false) { server, c in
            let admin = [("Authorization", "Bearer \(server.admin)")]
            var r = try c.json("POST", "/.canopy/publish?ns=\(Self.ns)", headers: admin + [("if-match", "stale")])
            #expect(r.status == 412)
            let status = try c.json("GET", "/.canopy/status?ns=\(Self.ns)", headers: admin)
            let etag = try #require(status.response.header("etag"))
            r = try c.json("POST", "/.canopy/publish?ns=\(Self.ns)", headers: admin + [("if-match", etag)])
            #expect(r.status == 200)
            // Edit a draft, then revert it.
            _ = try c.json("PUT", "/private/admin/pendingContent/new.json?ns=\(Self.ns)", #"{"order":20,"type":"text","checkAll":true}"#, headers: admin)
            r = try c.json("POST", "/.canopy/revert?ns=\(Self.ns)", headers: admin)
            #expect(r.status == 200)
            r = try c.json("GET", "/private/admin/pendingContent/new.json?ns=\(Self.ns)", headers: admin)
            #expect(r.json == .null)
            // Invalid item: nothing is published and the reason names the item.
            _ = try c.json("PUT", "/private/admin/pendingContent/bad.json?ns=\(Self.ns)", #"{"order":"soon","type":"text"}"#, headers: admin)
            let before = try c.request("GET", "/public/admin/content.json?ns=\(Self.ns)", headers: admin).body
            r = try c.json("POST", "/.canopy/publish?ns=\(Self.ns)", headers: admin)
            #expect(r.status == 400)
            #expect(r.json?["error"]?.stringValue?.contains("bad") == true)
            #expect(try c.request("GET", "/public/admin/content.json?ns=\(Self.ns)", headers: admin).body == before)
            // Attendees cannot publish.
            let token = try server.daemon.credentials.mint(
                claims: ["userId": "100201", "tierId": "101", "ns": .string(Self.ns)], ttlSeconds: 600,
                now: SystemClock().nowMilliseconds())
            r = try c.json("POST", "/.canopy/publish?ns=\(Self.ns)&auth=\(token)")
            #expect(r.status == 401)
            r = try c.json("POST", "/.canopy/unpublish?ns=\(Self.ns)&item=nope", headers: admin)
            #expect(r.status == 404)
            r = try c.json("POST", "/.canopy/publish?ns=unknown-event", headers: admin)
            #expect(r.status == 404)
        }
    }

    /// Subscribers on three locations record every event across 100 publishes that move the welcome item between
    /// everyone (public) and tier 101: each publish is exactly one event on each location it changes (that item
    /// alone, at its own path), none on the others, and no event ever leaves an empty or partial list.
    @Test(.timeLimit(.minutes(2))) func subscribersNeverSeeEmptyOrPartialState() throws {
        try withDemo(isolateGroups: false) { server, c in
            let admin = [("Authorization", "Bearer \(server.admin)")]
            #expect(try publish(server, c).status == 200)
            let locations = [
                "public/admin/content", "private/adminable/tiers/101/content", "private/adminable/users/100201/content",
            ]
            let recorders = try locations.map { try SSERecorder(port: server.port, path: "/\($0).json?ns=\(Self.ns)", headers: admin) }
            let publishes = 100
            for i in 1...publishes {
                // Odd rounds: the welcome item is for tier 101 only; even rounds: for everyone again.
                let body = i % 2 == 1 ? #"{"checkAll":false,"tierIds":[101]}"# : #"{"checkAll":true,"tierIds":null}"#
                #expect(try c.json("PATCH", "/private/admin/pendingContent/-OKzKOoLaQT_8iMGWeID.json?ns=\(Self.ns)", body, headers: admin).status == 200)
                #expect(try publish(server, c).status == 200)
            }
            // A fence on each location, written after the last publish: each stream's events arrive in commit order,
            // so every event a publish caused (an extra one included) is recorded before the fence's.
            for location in locations {
                #expect(try c.json("PUT", "/\(location)/\(SSERecorder.fence).json?ns=\(Self.ns)", "true", headers: admin).status == 200)
            }
            let expectedCounts = [publishes + 1, publishes + 1, 1]
            let allowedSizes: [Set<Int>] = [[4, 5], [1, 2], [1]]
            for (index, recorder) in recorders.enumerated() {
                let seen = try #require(recorder.eventsBeforeFence(), "\(locations[index]): the fence never arrived")
                recorder.stop()
                #expect(seen.count == expectedCounts[index], "\(locations[index]): one initial event and one per change")
                #expect(seen.first?["path"] == "/", "\(locations[index]): the whole location first")
                for event in seen.dropFirst() {
                    #expect(event["path"] == "/-OKzKOoLaQT_8iMGWeID", "\(locations[index]): the moved item alone")
                }
                var value = Node.empty
                for event in seen {
                    let path = try Path(parsing: event["path"]?.stringValue ?? "/")
                    value = value.setting(try Node.from(json: event["data"] ?? .null), at: path)
                    let size = value.childCount
                    #expect(allowedSizes[index].contains(size), "\(locations[index]): a partial or empty list of \(size)")
                }
            }
        }
    }
}

/// Records the `put` events of one SSE stream on a background thread.
final class SSERecorder: @unchecked Sendable {  // safe: `client` is used only by the reader thread until stop()
    private let client: HTTPClient
    private let events = Mutex<[JSONValue]>([])

    init(port: Int, path: String, headers: [(String, String)]) throws {
        client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 10)
        let head = try client.openStream(path, headers: headers + [("Accept", "text/event-stream")])
        guard head.status == 200 else { throw HTTPClientError("stream refused: \(head.status)") }
        Thread { [self] in
            var buffer = ""
            while let chunk = try? client.readChunk(), !chunk.isEmpty {
                buffer += String(decoding: chunk, as: UTF8.self)
                while let range = buffer.range(of: "\n\n") {
                    let event = String(buffer[..<range.lowerBound])
                    buffer = String(buffer[range.upperBound...])
                    guard event.hasPrefix("event: put"),
                        let line = event.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }),
                        let json = try? JSONValue.parse(String(line.dropFirst(6)))
                    else { continue }
                    events.withLock { $0.append(json) }
                }
            }
        }.start()
    }

    /// The child a test writes last to mark the end of the events it waits for.
    static let fence = "zzFence"

    /// The events recorded before the fence's, once it has arrived (polling the reader thread for up to 20 s);
    /// nil if it never did.
    func eventsBeforeFence() -> [JSONValue]? {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let recorded = events.withLock { $0 }
            if let end = recorded.firstIndex(where: { $0["path"]?.stringValue == "/\(Self.fence)" }) {
                return Array(recorded[..<end])
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return nil
    }

    /// The events recorded so far, once there are at least `count` (polling for up to 5 s); nil if there never were.
    func events(atLeast count: Int) -> [JSONValue]? {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            let recorded = events.withLock { $0 }
            if recorded.count >= count { return recorded }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return nil
    }

    func stop() { client.close() }
}

@Suite struct PublishCrashTests {
    /// `kill -9` while publishes are streaming in: after a restart, the derived locations are exactly the fan-out
    /// of `private/admin/content` — the old or the new state, whole, never a mix.
    @Test(.timeLimit(.minutes(2))) func killDuringPublishLeavesOldOrNewStateWhole() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try ServerProcess(dataDirectory: data, extraArguments: ["--demo"])
        let admin = [("Authorization", "Bearer \(server.admin)")]
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5)
        let ns = PublishTests.ns
        // The demo loads on the loop's first pass: wait until the item the rounds edit is there.
        let item = "/private/admin/pendingContent/-OKzKOoLaQT_8iMGWeID.json?ns=\(ns)"
        let loadedBy = Date().addingTimeInterval(20)
        while (try? client.request("GET", item, headers: admin))?.body == Array("null".utf8), Date() < loadedBy {
            Thread.sleep(forTimeInterval: 0.05)
        }
        // A publisher thread runs rounds until the daemon dies; the kill comes after a few have completed (a count,
        // not a time, so a slow machine still kills mid-stream).
        let published = Mutex(0)
        let publisherDone = DispatchSemaphore(value: 0)
        let port = server.port
        let publisher = Thread {
            defer { publisherDone.signal() }
            let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 5)
            while true {
                // Each round moves the welcome item between everyone and tier 101 only, then publishes.
                let tierOnly = published.withLock { $0 } % 2 == 0
                let body = tierOnly ? #"{"checkAll":false,"tierIds":[101]}"# : #"{"checkAll":true,"tierIds":null}"#
                guard (try? client.request("PATCH", item, headers: admin, body: Array(body.utf8)))?.status == 200,
                    (try? client.request("POST", "/.canopy/publish?ns=\(ns)", headers: admin))?.status == 200
                else { return }
                published.withLock { $0 += 1 }
            }
        }
        publisher.start()
        let killBy = Date().addingTimeInterval(30)
        while published.withLock({ $0 }) < 4 && Date() < killBy { Thread.sleep(forTimeInterval: 0.01) }
        server.kill9()
        _ = publisherDone.wait(timeout: .now() + 20)  // its next request fails; nothing reaches the restarted daemon
        #expect(published.withLock { $0 } >= 4)
        let restarted = try ServerProcess(dataDirectory: data)
        defer { restarted.terminate() }
        let r = try HTTPClient(host: "127.0.0.1", port: restarted.port).request(
            "GET", "/.json?ns=\(ns)&format=export", headers: admin)
        let root = try Node.from(json: try JSONValue.parse(r.body))
        let content = root.node(at: PublishLayout.content)
        #expect(!content.isEmpty)
        // Were `content` republished now, no derived location would change.
        let check = root.setting(content, at: PublishLayout.pendingContent)
        let plan = PublishEngine.dryRun(root: check, directory: nil)
        #expect(plan["locations"]?.arrayValue?.isEmpty == true, "derived locations disagree with content: \(plan)")
    }
}
