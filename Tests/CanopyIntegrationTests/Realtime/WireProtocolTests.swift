// WireProtocolTests -- the Firebase wire protocol v5 over a real WebSocket against the in-process daemon.

import CanopyCore
import CanopyNet
import Foundation
import Testing

@Suite struct WireProtocolTests {
    func connect(_ server: InProcessServer, _ ns: String) throws -> WireTestClient {
        let client = try WireTestClient(port: server.port, namespace: ns)
        let hello = try #require(client.waitFor { $0["t"] == "c" })
        #expect(hello["d"]?["t"] == "h")
        #expect(hello["d"]?["d"]?["v"] == "5")
        #expect(hello["d"]?["d"]?["ts"]?.int64Value != nil)
        return client
    }

    func authAsAdmin(_ client: WireTestClient, _ server: InProcessServer) throws {
        let r = client.request("gauth", ["cred": .string(server.admin)])
        #expect(client.reply(r)?["d"]?["b"]?["s"] == "ok")
    }

    /// Two sockets on namespace `ns`, both authenticated as admin.
    func connectAdmins(_ server: InProcessServer, _ ns: String) throws -> (WireTestClient, WireTestClient) {
        let a = try connect(server, ns)
        let b = try connect(server, ns)
        try authAsAdmin(a, server)
        try authAsAdmin(b, server)
        return (a, b)
    }

    @Test func listenGetsDataBeforeOkThenLiveChanges() throws {
        try withServer { server in
            let (a, b) = try connectAdmins(server, "ws1")
            let w = b.request("p", ["p": "/rooms/r1", "d": ["name": "Lobby"]])
            #expect(b.reply(w)?["d"]?["b"]?["s"] == "ok")
            let q = a.request("q", ["p": "/rooms", "h": ""])
            let ok = try #require(a.reply(q))
            #expect(ok["d"]?["b"]?["s"] == "ok")
            #expect(ok["d"]?["b"]?["d"] == [:])
            // The data push came before the ok.
            let data = try #require(a.push("d", path: "/rooms"))
            #expect(data["d"]?["b"]?["d"] == ["r1": ["name": "Lobby"]])
            // A write by b reaches a as a push at the written path.
            let w2 = b.request("p", ["p": "/rooms/r1/open", "d": true])
            #expect(b.reply(w2)?["d"]?["b"]?["s"] == "ok")
            let change = try #require(a.push("d", path: "/rooms/r1/open"))
            #expect(change["d"]?["b"]?["d"] == true)
            // Merge above the listen: only what lies inside is pushed.
            let m = b.request("m", ["p": "/", "d": ["rooms/r2": ["name": "Stage"], "elsewhere": 1]])
            #expect(b.reply(m)?["d"]?["b"]?["s"] == "ok")
            let merged = try #require(a.push("d", path: "/rooms/r2"))
            #expect(merged["d"]?["b"]?["d"] == ["name": "Stage"])
            #expect(a.push("d", path: "/elsewhere", timeout: 0.5) == nil)
        }
    }

    @Test func tagsQueriesAndUnlisten() throws {
        try withServer { server in
            let a = try connect(server, "ws2")
            try authAsAdmin(a, server)
            let w = a.request("p", ["p": "/scores", "d": ["a": 1, "b": 5, "c": 3, "d": 9]])
            #expect(a.reply(w)?["d"]?["b"]?["s"] == "ok")
            let q = a.request("q", ["p": "/scores", "q": ["i": ".value", "l": 2, "vf": "r"], "t": 7, "h": ""])
            let data = try #require(a.push("d", path: "/scores"))
            #expect(data["d"]?["b"]?["t"] == 7)
            #expect(data["d"]?["b"]?["d"] == ["b": 5, "d": 9])
            #expect(a.reply(q)?["d"]?["b"]?["s"] == "ok")
            let w2 = a.request("p", ["p": "/scores/e", "d": 7])
            #expect(a.reply(w2)?["d"]?["b"]?["s"] == "ok")
            let update = try #require(a.push("d", path: "/scores"))
            #expect(update["d"]?["b"]?["t"] == 7)
            #expect(update["d"]?["b"]?["d"] == ["e": 7, "d": 9])
            let n = a.request("n", ["p": "/scores", "t": 7])
            #expect(a.reply(n)?["d"]?["b"]?["s"] == "ok")
            let w3 = a.request("p", ["p": "/scores/f", "d": 100])
            #expect(a.reply(w3)?["d"]?["b"]?["s"] == "ok")
            #expect(a.push("d", path: "/scores", timeout: 0.5) == nil)
        }
    }

    @Test func transactionsCompareHashes() throws {
        try withServer { server in
            let a = try connect(server, "ws3")
            try authAsAdmin(a, server)
            let q = a.request("q", ["p": "/counter", "h": ""])
            #expect(a.reply(q)?["d"]?["b"]?["s"] == "ok")
            // "" means "expects empty".
            var r = a.request("p", ["p": "/counter", "d": 10, "h": ""])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            r = a.request("p", ["p": "/counter", "d": 11, "h": ""])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "datastale")
            // The hash of the leaf 10 (Protocol.md#Hashes).
            r = a.request("p", ["p": "/counter", "d": 11, "h": "+r5aI9HvKKagELki8SYKBk0q7D4="])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
        }
    }

    @Test func onDisconnectRunsWhenTheSocketDrops() throws {
        try withServer { server in
            let (a, b) = try connectAdmins(server, "ws4")
            var r = a.request("p", ["p": "/presence/u1", "d": true])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            r = a.request("o", ["p": "/presence/u1", "d": .null])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            r = a.request("om", ["p": "/presence", "d": ["lastSeen": ["\u{2E}sv": "timestamp"]]])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            r = a.request("o", ["p": "/cancelled/x", "d": 1])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            r = a.request("oc", ["p": "/cancelled", "d": .null])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            let q = b.request("q", ["p": "/", "h": ""])
            #expect(b.reply(q)?["d"]?["b"]?["s"] == "ok")
            a.close()
            #expect(b.push("d", path: "/presence/u1")?["d"]?["b"]?["d"] == .null)
            // The queued merge arrives as a merge at its path.
            let seen = try #require(b.push("m", path: "/presence"))
            #expect(seen["d"]?["b"]?["d"]?["lastSeen"]?.int64Value != nil)
            let g = b.request("g", ["p": "/cancelled", "q": [:]])
            #expect(b.reply(g)?["d"]?["b"]?["d"] == .null)
        }
    }

    @Test func rulesAndAuthOnTheSocket() throws {
        try withServer(configure: { $0.rulesFile = rulesFile("personalized-content.rules.json") }) { server in
            let ns = "wsrules"
            let admin = try connect(server, ns)
            try authAsAdmin(admin, server)
            let w = admin.request("p", ["p": "/private/adminable/users/901/content", "d": ["u": ["order": 1]]])
            #expect(admin.reply(w)?["d"]?["b"]?["s"] == "ok")
            let a = try connect(server, ns)
            // Unauthenticated: denied, nothing leaked.
            var q = a.request("q", ["p": "/private/adminable/users/901", "h": ""])
            #expect(a.reply(q)?["d"]?["b"]?["s"] == "permission_denied")
            #expect(a.push("d", path: "/private/adminable/users/901", timeout: 0.5) == nil)
            // A bad token: error status, the socket stays usable.
            var r = a.request("auth", ["cred": "not-a-token"])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "invalid_token")
            let token = try server.daemon.credentials.mint(
                claims: ["uid": "901", "userId": "901", "tierId": "55", "ns": .string(ns)], ttlSeconds: 600,
                now: SystemClock().nowMilliseconds())
            r = a.request("auth", ["cred": .string(token)])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            q = a.request("q", ["p": "/private/adminable/users/901", "h": ""])
            #expect(a.reply(q)?["d"]?["b"]?["s"] == "ok")
            #expect(a.push("d", path: "/private/adminable/users/901")?["d"]?["b"]?["d"] == ["content": ["u": ["order": 1]]])
            // Writes are denied by the rules.
            r = a.request("p", ["p": "/private/adminable/users/901/content/x", "d": 1])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "permission_denied")
            // unauth revokes the listen with `c`.
            r = a.request("unauth", [:])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            #expect(a.push("c", path: "/private/adminable/users/901") != nil)
        }
    }

    @Test func pingsAndLargeMessagesAreFramedAsFirebaseExpects() throws {
        try withServer { server in
            let a = try connect(server, "ws5")
            try authAsAdmin(a, server)
            a.sendRaw(#"{"t":"c","d":{"t":"p","d":{}}}"#)
            #expect(a.waitFor { $0["t"] == "c" && $0["d"]?["t"] == "o" } != nil)
            a.sendRaw("0")  // client keep-alive: ignored
            // A client message split into counted pieces.
            let big = String(repeating: "x", count: 40_000)
            let message = JSONValue(["t": "d", "d": ["r": 99, "a": "p", "b": ["p": "/big", "d": .string(big)]]]).serialized()
            let pieces = stride(from: 0, to: message.count, by: 16_384).map { start -> String in
                let s = message.index(message.startIndex, offsetBy: start)
                let e = message.index(s, offsetBy: min(16_384, message.count - start))
                return String(message[s..<e])
            }
            a.sendRaw(String(pieces.count))
            for piece in pieces { a.sendRaw(piece) }
            #expect(a.reply(99)?["d"]?["b"]?["s"] == "ok")
            let g = a.request("g", ["p": "/big", "q": [:]])
            let value = a.reply(g)?["d"]?["b"]?["d"]?.stringValue
            #expect(value?.count == big.count && value == big, "the 40 kB reply arrives whole")
            #expect(a.largestFrame.withLock { $0 } <= 16_384, "replies are cut into pieces of at most 16384 units")
        }
    }

    /// A get with an invalid query is refused as a listen with that query is, never answered with unfiltered data.
    @Test func getWithAnInvalidQueryFailsAsAListenDoes() throws {
        try withServer { server in
            let a = try connect(server, "wsbadget")
            try authAsAdmin(a, server)
            #expect(a.reply(a.request("p", ["p": "/scores", "d": ["a": 1, "b": 5]]))?["d"]?["b"]?["s"] == "ok")
            let invalid: [JSONValue] = [
                ["l": -1], ["i": 5], ["i": "/"], ["l": 2, "vf": "x"], ["sp": [1]], ["i": ".key", "sp": 1],
            ]
            for query in invalid {
                let listen = try #require(a.reply(a.request("q", ["p": "/scores", "q": query, "t": 1, "h": ""])))
                #expect(listen["d"]?["b"]?["s"] == "failure", "listen \(query)")
                let get = try #require(a.reply(a.request("g", ["p": "/scores", "q": query])))
                #expect(get["d"]?["b"] == listen["d"]?["b"], "get \(query)")
            }
            #expect(a.push("d", path: "/scores", timeout: 0.3) == nil)
        }
    }

    /// Unindexed child queries still run; the `ok` carries the `no_index` warning the SDKs log.
    @Test func unindexedQueriesWarn() throws {
        try withServer(configure: { $0.rulesFile = rulesFile("personalized-content.rules.json") }) { server in
            let a = try connect(server, "idx")
            try authAsAdmin(a, server)
            let w = a.request("p", ["p": "/public/admin/content", "d": ["x": ["order": 2, "title": "b"], "y": ["order": 1, "title": "a"]]])
            #expect(a.reply(w)?["d"]?["b"]?["s"] == "ok")
            var q = a.request("q", ["p": "/public/admin/content", "q": ["i": "order", "l": 1, "vf": "l"], "t": 1, "h": ""])
            #expect(a.reply(q)?["d"]?["b"]?["d"] == [:])
            #expect(a.push("d", path: "/public/admin/content")?["d"]?["b"]?["d"] == ["y": ["order": 1, "title": "a"]])
            q = a.request("q", ["p": "/public/admin/content", "q": ["i": "title", "l": 1, "vf": "r"], "t": 2, "h": ""])
            #expect(a.reply(q)?["d"]?["b"]?["d"] == ["w": ["no_index"]])
            #expect(a.push("d", path: "/public/admin/content")?["d"]?["b"]?["d"] == ["x": ["order": 2, "title": "b"]])
        }
    }

    /// A token that expires mid-connection: `ac` with expired_token, then the listen it granted is revoked. Time is
    /// the daemon's: a fixed wall clock and a manual loop clock, so the expiry fires exactly at the token's `exp`.
    @Test func expiredTokenRevokesAuthAndListens() throws {
        let time = DaemonTime()
        try withServer(configure: {
            $0.rulesFile = rulesFile("personalized-content.rules.json")
            time.apply(to: &$0)
        }) { server in
            let ns = "wsexpiry"
            let a = try connect(server, ns)
            // exp 58 s ago: still honoured (60 s of skew), revoked 2 s from now.
            let token = try server.daemon.credentials.mint(
                claims: ["uid": "901", "userId": "901", "tierId": "55", "ns": .string(ns)], ttlSeconds: 1,
                now: time.wall.nowMilliseconds() - 59_000)
            var r = a.request("auth", ["cred": .string(token)])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            r = a.request("q", ["p": "/private/adminable/users/901", "h": ""])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            // A millisecond early: the loop runs what became due before it reads the next request, so an `ac` would
            // arrive before this reply.
            time.loop.advance(byMilliseconds: 1_999)
            #expect(a.reply(a.request("s", ["c": [:]]))?["d"]?["b"]?["s"] == "ok")
            #expect(!a.all.contains { $0["d"]?["a"] == "ac" })
            time.loop.advance(byMilliseconds: 1)
            let revoked = try #require(a.push("ac", timeout: 5))
            #expect(revoked["d"]?["b"]?["s"] == "expired_token")
            #expect(a.push("c", path: "/private/adminable/users/901") != nil)
        }
    }

    /// An update (`m`) at or below a listen arrives as one `m` push, as Firebase sends it; below the update's path,
    /// a listen gets its own new value as a `d`.
    @Test func updatesArriveAsMergesAtOrAboveTheirPath() throws {
        try withServer { server in
            let (a, b) = try connectAdmins(server, "merges")
            #expect(b.reply(b.request("p", ["p": "/rooms", "d": ["r1": ["name": "Lobby"]]]))?["d"]?["b"]?["s"] == "ok")
            #expect(a.reply(a.request("q", ["p": "/rooms", "h": ""]))?["d"]?["b"]?["s"] == "ok")
            #expect(a.reply(a.request("q", ["p": "/rooms/r1/name", "h": ""]))?["d"]?["b"]?["s"] == "ok")
            _ = a.push("d", path: "/rooms")
            _ = a.push("d", path: "/rooms/r1/name")
            let m = b.request("m", ["p": "/rooms", "d": ["r2/name": "Stage", "r1/name": "Hall", "r1/gone": .null]])
            #expect(b.reply(m)?["d"]?["b"]?["s"] == "ok")
            let merge = try #require(a.push("m", path: "/rooms"))
            #expect(merge["d"]?["b"]?["d"] == ["r2/name": "Stage", "r1/name": "Hall"])
            #expect(merge["d"]?["b"]?["t"] == nil)
            let own = try #require(a.push("d", path: "/rooms/r1/name"))
            #expect(own["d"]?["b"]?["d"] == "Hall")
            #expect(a.push("d", path: "/rooms", timeout: 0.3) == nil)
        }
    }

    /// Back-to-back writes to one path land in one group commit; a listener still gets every value, in order.
    @Test func everyWriteIsDeliveredEvenWithinOneCommit() throws {
        try withServer { server in
            let (a, b) = try connectAdmins(server, "seq")
            let q = a.request("q", ["p": "/users/1", "h": ""])
            #expect(a.reply(q)?["d"]?["b"]?["s"] == "ok")
            var last: Int64 = 0
            for seq in 1...20 { last = b.request("p", ["p": "/users/1/msg", "d": ["seq": .int(Int64(seq))]]) }
            #expect(b.reply(last)?["d"]?["b"]?["s"] == "ok")
            var received: [Int64] = []
            while received.count < 20, let push = a.push("d", timeout: 3) {
                if let seq = push["d"]?["b"]?["d"]?["seq"]?.int64Value { received.append(seq) }
            }
            #expect(received == Array(1...20))
        }
    }
}
