// IncrementalPublishTests -- through the real daemon and real sockets: a publish that changed one item tells the
// listeners of the locations that item reaches of that item alone, and nobody else of anything; several changed
// items of one location arrive as one merge; and a change is serialized once however many listen to it.

import CanopyCore
import CanopyNet
import CanopyPublish
import Foundation
import Testing

@Suite struct IncrementalPublishTests {
    static let ns = "incremental"

    /// 30 items `item10`…`item39` (item i + 10 has order i): every third global, the others for tier 1 (i even) or
    /// tier 2 (i odd), and one for attendee u1.
    static func pending() -> JSONValue {
        var members: [JSONMember] = []
        for i in 0..<30 {
            let visibility: JSONMember =
                i % 3 == 0 ? JSONMember("checkAll", true) : JSONMember("tierIds", [.int(Int64(1 + i % 2))])
            members.append(
                JSONMember(
                    "item\(i + 10)",
                    .object([
                        JSONMember("order", .int(Int64(i))), JSONMember("type", "text"), JSONMember("text", "t"),
                        visibility,
                    ])))
        }
        members.append(JSONMember("mine", ["order": 99, "type": "text", "text": "t", "attendeeIds": ["u1"]]))
        return .object(members)
    }

    static let listened = [
        "/private/adminable/tiers/1/content", "/private/adminable/tiers/2/content", "/public/admin/content",
        "/private/adminable/users/u1/content",
    ]

    /// An admin socket listening on `path`, once its initial value has arrived.
    func listener(_ server: InProcessServer, _ path: String) throws -> WireTestClient {
        let client = try WireTestClient(port: server.port, namespace: Self.ns)
        let auth = client.request("gauth", ["cred": .string(server.admin)])
        #expect(client.reply(auth)?["d"]?["b"]?["s"] == "ok")
        let listen = client.request("q", ["p": .string(path), "h": ""])
        #expect(client.reply(listen)?["d"]?["b"]?["s"] == "ok")
        #expect(client.push("d", path: path) != nil, "the initial value of \(path)")
        return client
    }

    /// Writes a fence child under each listened location and returns, per listener, the pushes before it; then
    /// deletes the fences again (a publish would: it makes each location exactly its fan-out) and consumes that.
    func pushesUntilFence(_ c: HTTPClient, _ admin: [(String, String)], _ listeners: [WireTestClient]) throws
        -> [[JSONValue]]
    {
        func fence(_ path: String, _ value: JSONValue) -> (JSONValue) -> Bool {
            { $0["d"]?["a"] == "d" && $0["d"]?["b"]?["p"] == .string("\(path)/zzFence") && $0["d"]?["b"]?["d"] == value }
        }
        for path in Self.listened {
            #expect(try c.json("PUT", "\(path)/zzFence.json?ns=\(Self.ns)", "true", headers: admin).status == 200)
        }
        let seen = try zip(Self.listened, listeners).map { path, listener in
            _ = try #require(listener.waitFor(fence(path, true)), "the fence on \(path)")
            // What is left came before the fence (in order on one socket).
            return listener.takeAll().filter { $0["d"]?["a"] != nil }
        }
        for path in Self.listened {
            #expect(try c.json("DELETE", "\(path)/zzFence.json?ns=\(Self.ns)", headers: admin).status == 200)
        }
        for (path, listener) in zip(Self.listened, listeners) {
            _ = try #require(listener.waitFor(fence(path, .null)), "the fence's removal on \(path)")
            let after = listener.takeAll().filter { $0["d"]?["a"] != nil }
            #expect(after.isEmpty, "\(path): nothing after the fence's removal: \(after)")
        }
        return seen
    }

    func metric(_ c: HTTPClient, _ admin: [(String, String)], _ name: String) throws -> Int {
        let text = try c.request("GET", "/.canopy/metrics", headers: admin).text
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(name + " ") })
        return try #require(Int(line.split(separator: " ").last ?? ""))
    }

    @Test(.timeLimit(.minutes(1))) func anEditedItemReachesOnlyItsListenersAndOnlyItself() throws {
        try withServer { server in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            var body: [UInt8] = []
            Self.pending().write(into: &body)
            #expect(
                try c.request("PUT", "/private/admin/pendingContent.json?ns=\(Self.ns)", headers: admin, body: body)
                    .status == 200)
            #expect(try c.json("POST", "/.canopy/publish?ns=\(Self.ns)", headers: admin).status == 200)
            let listeners = try Self.listened.map { try listener(server, $0) }
            defer { listeners.forEach { $0.close() } }
            let before = try metric(c, admin, "canopy_push_serializations_total")

            // One tier-1 item edited (item12: i = 2), then a whole publish.
            #expect(
                try c.json(
                    "PUT", "/private/admin/pendingContent/item12/title.json?ns=\(Self.ns)", #""edited""#,
                    headers: admin
                ).status == 200)
            #expect(try c.json("POST", "/.canopy/publish?ns=\(Self.ns)", headers: admin).status == 200)
            #expect(try metric(c, admin, "canopy_push_serializations_total") == before + 1)
            var seen = try pushesUntilFence(c, admin, listeners)
            #expect(seen[0].count == 1, "tier 1: exactly one push, for the edited item: \(seen[0])")
            let push = try #require(seen[0].first?["d"])
            #expect(push["a"] == "d")
            #expect(push["b"]?["p"] == "/private/adminable/tiers/1/content/item12")
            #expect(push["b"]?["d"] == ["order": 2, "type": "text", "text": "t", "title": "edited"])
            for index in 1..<Self.listened.count {
                #expect(seen[index].isEmpty, "\(Self.listened[index]) is not affected: \(seen[index])")
            }

            // Two tier-2 items edited and one removed in one publish: one merge on tier 2, nothing elsewhere.
            for (key, value) in [("item11", #""a""#), ("item15", #""b""#)] {
                #expect(
                    try c.json(
                        "PUT", "/private/admin/pendingContent/\(key)/title.json?ns=\(Self.ns)", value, headers: admin
                    ).status == 200)
            }
            #expect(
                try c.json("DELETE", "/private/admin/pendingContent/item17.json?ns=\(Self.ns)", headers: admin)
                    .status == 200)
            #expect(try c.json("POST", "/.canopy/publish?ns=\(Self.ns)", headers: admin).status == 200)
            seen = try pushesUntilFence(c, admin, listeners)
            #expect(seen[1].count == 1, "tier 2: one merge for the whole publish: \(seen[1])")
            let merge = try #require(seen[1].first?["d"])
            #expect(merge["a"] == "m")
            #expect(merge["b"]?["p"] == "/private/adminable/tiers/2/content")
            #expect(
                merge["b"]?["d"]
                    == [
                        "item11": ["order": 1, "type": "text", "text": "t", "title": "a"],
                        "item15": ["order": 5, "type": "text", "text": "t", "title": "b"], "item17": .null,
                    ])
            for index in [0, 2, 3] {
                #expect(seen[index].isEmpty, "\(Self.listened[index]) is not affected: \(seen[index])")
            }
            // The published state is exactly the fan-out of `content`.
            let tier2 = try c.json("GET", "/private/adminable/tiers/2/content.json?ns=\(Self.ns)", headers: admin)
            #expect(tier2.json?["item17"] == nil && tier2.json?["item11"]?["title"] == "a")
        }
    }

    @Test(.timeLimit(.minutes(1))) func aChangeIsSerializedOnceForEveryListenerOfItsLocation() throws {
        try withServer { server in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let listeners = try (0..<12).map { _ in
                let client = try WireTestClient(port: server.port, namespace: Self.ns)
                let auth = client.request("gauth", ["cred": .string(server.admin)])
                #expect(client.reply(auth)?["d"]?["b"]?["s"] == "ok")
                let listen = client.request("q", ["p": "/shared", "h": ""])
                #expect(client.reply(listen)?["d"]?["b"]?["s"] == "ok")
                return client
            }
            defer { listeners.forEach { $0.close() } }
            let serialized = try metric(c, admin, "canopy_push_serializations_total")
            #expect(try c.json("PUT", "/shared/x.json?ns=\(Self.ns)", "1", headers: admin).status == 200)
            for listener in listeners { #expect(listener.push("d", path: "/shared/x") != nil) }
            // Twelve listeners, one location, one change: serialized once.
            #expect(try metric(c, admin, "canopy_push_serializations_total") == serialized + 1)
        }
    }
}
