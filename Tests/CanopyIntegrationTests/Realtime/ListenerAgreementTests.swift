// ListenerAgreementTests -- random writes from one socket; every listener of another socket, plain or query, must
// end at exactly what a fresh listen returns (differential check of the fan-out's `d`/`m` pushes). A third socket
// joins halfway through, while writes are in flight, and must agree too.

import CanopyCore
import Foundation
import Testing

@Suite struct ListenerAgreementTests {
    /// A listen of the test: its path, its wire query (nil for a plain listen) and its tag.
    struct Listen {
        let path: String
        let query: JSONValue?
        let tag: Int64?
    }

    static let listens = [
        Listen(path: "/root", query: nil, tag: nil),
        Listen(path: "/root/a", query: nil, tag: nil),
        Listen(path: "/root/a/b", query: nil, tag: nil),
        Listen(path: "/root", query: ["i": "b", "l": 3, "vf": "r"], tag: 1),
        Listen(path: "/root", query: ["i": ".key", "l": 2, "vf": "l"], tag: 2),
        Listen(path: "/root", query: ["i": ".value", "sp": 0, "ep": "b"], tag: 3),
        Listen(path: "/root/b", query: ["i": ".priority", "l": 2, "vf": "l"], tag: 4),
    ]

    private static let keys = ["a", "b", "c", "0", "1", "10", "-1", "x y"]

    private func randomValue(_ rng: inout SplitMix64, depth: Int = 0) -> JSONValue {
        let roll = rng.next(below: 100)
        if depth > 2 || roll < 45 {
            let leaves: [JSONValue] = [.null, true, false, 0, 1, -3, 2.5, "a", "b", "", 7]
            return leaves[rng.next(below: leaves.count)]
        }
        if roll < 55 { return [randomValue(&rng, depth: depth + 1), randomValue(&rng, depth: depth + 1)] }
        var members = randomMembers(&rng, count: rng.next(below: 4), depth: depth + 1)
        if rng.next(below: 7) == 0 { members.append(JSONMember(".priority", [1, "p", 5][rng.next(below: 3)])) }
        return .object(members)
    }

    /// Up to `count` children with distinct keys, in a deterministic order.
    private func randomMembers(_ rng: inout SplitMix64, count: Int, depth: Int) -> [JSONMember] {
        var members: [JSONMember] = []
        for _ in 0..<count {
            let key = Self.keys[rng.next(below: Self.keys.count)]
            let value = randomValue(&rng, depth: depth)
            if !members.contains(where: { $0.key == key }) { members.append(JSONMember(key, value)) }
        }
        return members
    }

    /// The body of a `q` request for `listen`.
    private func listenBody(_ listen: Listen) -> JSONValue {
        var members = [JSONMember("p", .string(listen.path)), JSONMember("h", "")]
        if let query = listen.query, let tag = listen.tag {
            members += [JSONMember("q", query), JSONMember("t", .int(tag))]
        }
        return .object(members)
    }

    private func randomPath(_ rng: inout SplitMix64) -> String {
        let depth = 1 + rng.next(below: 3)
        return "/root/" + (0..<depth).map { _ in Self.keys[rng.next(below: Self.keys.count)] }.joined(separator: "/")
    }

    /// Applies one `d` or `m` push to the view it belongs to (paths are absolute, as the server sends them).
    private func apply(_ push: JSONValue, to views: inout [String: Node]) throws {
        let action = push["d"]?["a"]?.stringValue
        let body = try #require(push["d"]?["b"])
        let path = try Path(parsing: try #require(body["p"]?.stringValue))
        let view = body["t"]?.int64Value.map { "tag \($0)" } ?? "plain"
        var tree = views[view] ?? .empty
        if action == "m", case .object(let children)? = body["d"] {
            for member in children {
                let child = path.appending(try Path(parsing: member.key))
                tree = tree.setting(try Node.from(json: member.value, at: child), at: child)
            }
        } else {
            tree = tree.setting(try Node.from(json: body["d"] ?? .null, at: path), at: path)
        }
        views[view] = tree
    }

    /// What a fresh socket's listen first receives (the value at the path, or the query window).
    private func freshValue(of listen: Listen, server: InProcessServer) throws -> Node {
        let protocolTests = WireProtocolTests()
        let client = try protocolTests.connect(server, "agree")
        try protocolTests.authAsAdmin(client, server)
        let r = client.request("q", listenBody(listen))
        let data = try #require(client.push("d", path: listen.path))
        #expect(client.reply(r)?["d"]?["b"]?["s"] == "ok")
        return try Node.from(json: data["d"]?["b"]?["d"] ?? .null)
    }

    @Test(arguments: [UInt64(11), 12, 13])
    func randomWritesLeaveEveryListenerWhereAFreshListenStarts(seed: UInt64) throws {
        try withServer { server in
            let (writer, listener) = try WireProtocolTests().connectAdmins(server, "agree")
            // Start from an empty /root.
            #expect(writer.reply(writer.request("p", ["p": "/root", "d": .null]))?["d"]?["b"]?["s"] == "ok")
            for listen in Self.listens {
                #expect(listener.reply(listener.request("q", listenBody(listen)))?["d"]?["b"]?["s"] == "ok")
            }
            #expect(listener.reply(listener.request("q", ["p": "/sentinel", "h": ""]))?["d"]?["b"]?["s"] == "ok")
            let late = try WireProtocolTests().connect(server, "agree")
            try WireProtocolTests().authAsAdmin(late, server)

            var rng = SplitMix64(seed: seed)
            var last: Int64 = 0
            for i in 0..<300 {
                let path = randomPath(&rng)
                switch rng.next(below: 10) {
                case 0..<5: last = writer.request("p", ["p": .string(path), "d": randomValue(&rng)])
                case 5..<8:
                    let children = randomMembers(&rng, count: 1 + rng.next(below: 3), depth: 1)
                    last = writer.request("m", ["p": .string(path), "d": .object(children)])
                default: last = writer.request("p", ["p": .string(path), "d": .null])
                }
                // Mostly pipelined (many operations per group commit); every 30th write waits (batches of one).
                if i % 30 == 14 { #expect(writer.reply(last)?["d"]?["b"]?["s"] == "ok") }
                // The late socket's listens join while earlier writes are still being committed and synced.
                if i == 150 {
                    for listen in Self.listens + [Listen(path: "/sentinel", query: nil, tag: nil)] {
                        late.request("q", listenBody(listen))
                    }
                }
            }
            #expect(writer.reply(last)?["d"]?["b"]?["s"] == "ok")
            // Pushes to one socket keep commit order: once the sentinel arrives, every earlier push has.
            let end = writer.request("p", ["p": "/sentinel", "d": .int(Int64(seed))])
            #expect(writer.reply(end)?["d"]?["b"]?["s"] == "ok")
            var views: [(name: String, views: [String: Node])] = []
            for (name, socket) in [("listener", listener), ("late", late)] {
                let sentinel = socket.waitFor { message in
                    message["d"]?["b"]?["p"] == "/sentinel" && message["d"]?["b"]?["d"] == .int(Int64(seed))
                }
                #expect(sentinel != nil, "\(name)")
                var built: [String: Node] = [:]
                var pushes = 0
                for message in socket.all where message["d"]?["a"] == "d" || message["d"]?["a"] == "m" {
                    if message["d"]?["b"]?["p"]?.stringValue?.hasPrefix("/sentinel") == true { continue }
                    try apply(message, to: &built)
                    pushes += 1
                }
                #expect(pushes > (name == "late" ? 100 : 300), "\(name)")
                views.append((name, built))
            }
            for listen in Self.listens {
                let expected = try freshValue(of: listen, server: server)
                for (name, views) in views {
                    try expectAgreement(listen, views, expected, name)
                }
            }
        }
    }

    private func expectAgreement(_ listen: Listen, _ views: [String: Node], _ expected: Node, _ name: String) throws {
        let path = try Path(parsing: listen.path)
        var seen: Node
        if let query = listen.query, let tag = listen.tag {
            // A query view holds what the server pushed for it; the window of that is what the client shows.
            seen = (views["tag \(tag)"] ?? .empty).node(at: path)
            seen = try QuerySpec.fromWire(query).window(of: seen)
        } else {
            seen = (views["plain"] ?? .empty).node(at: path)
        }
        #expect(
            seen.json(export: true) == expected.json(export: true),
            "\(name): listen \(listen.path) \(listen.query.map { $0.serialized() } ?? "")")
    }
}
