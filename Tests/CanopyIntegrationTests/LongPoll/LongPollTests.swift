// LongPollTests -- the Firebase wire protocol over the `/.lp` long-polling transport, against the in-process daemon.

import CanopyCore
import CanopyNet
import CanopyServer
import Foundation
import Testing

@Suite struct LongPollTests {
    func start(_ server: InProcessServer, _ ns: String) throws -> LongPollTestClient {
        let client = try LongPollTestClient(port: server.port, namespace: ns)
        let hello = try #require(client.waitFor { $0["t"] == "c" })
        #expect(hello["d"]?["t"] == "h")
        #expect(hello["d"]?["d"]?["v"] == "5")
        #expect(hello["d"]?["d"]?["s"]?.stringValue?.isEmpty == false)
        return client
    }

    func authAsAdmin(_ client: LongPollTestClient, _ server: InProcessServer) throws {
        let r = try client.request("gauth", ["cred": .string(server.admin)], segmentSize: 24)
        #expect(client.reply(r)?["d"]?["b"]?["s"] == "ok")
    }

    /// Polls `GET path` (as admin) until it returns `expected`, or gives up.
    func eventually(_ server: InProcessServer, _ path: String, equals expected: JSONValue) throws
        -> Bool
    {
        let http = server.client()
        for _ in 0..<200 {
            let answer = try http.json(
                "GET", path + (path.contains("?") ? "&" : "?") + "auth=\(server.admin)")
            if answer.json == expected { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    @Test func startAnswersJavaScriptThatIsNeverCached() throws {
        try withServer { server in
            let response = try server.client().request("GET", "/.lp?start=t&ser=5&cb=3&v=5&ns=lp0")
            #expect(response.status == 200)
            #expect(response.header("content-type")?.hasPrefix("application/javascript") == true)
            #expect(response.header("cache-control")?.contains("no-store") == true)
            let calls = LongPollTestClient.calls(in: response.text)
            #expect(calls.map(\.name) == ["pLPCommand3", "pRTLPCB3"])
            #expect(calls.first?.arguments.first == "start")
            #expect(calls.last?.arguments.first == 0)
            let id = try #require(calls.first?.arguments[1].stringValue)
            let pw = try #require(calls.first?.arguments[2].stringValue)
            #expect(
                try server.client().request("GET", "/.lp?disconn=t&id=\(id)&pw=\(pw)&ns=lp0").status == 200)
        }
    }

    @Test func sessionListensWritesAndRunsOnDisconnectWhenTheClientLeaves() throws {
        try withServer { server in
            let a = try start(server, "lp1")
            a.startPolling()
            try authAsAdmin(a, server)
            // A listen whose messages span several segments and requests.
            let q = try a.request("q", ["p": "/rooms", "h": ""], segmentSize: 8, segmentsPerRequest: 3)
            let initial = try #require(a.push("d", path: "/rooms"))
            #expect(initial["d"]?["b"]?["d"] == .null)
            #expect(a.reply(q)?["d"]?["b"]?["s"] == "ok")
            // A write by a WebSocket client reaches the long-poll listener.
            let b = try WireTestClient(port: server.port, namespace: "lp1")
            let gauth = b.request("gauth", ["cred": .string(server.admin)])
            #expect(b.reply(gauth)?["d"]?["b"]?["s"] == "ok")
            let w = b.request("p", ["p": "/rooms/r1", "d": ["name": "Lobby"]])
            #expect(b.reply(w)?["d"]?["b"]?["s"] == "ok")
            let change = try #require(a.push("d", path: "/rooms/r1"))
            #expect(change["d"]?["b"]?["d"] == ["name": "Lobby"])
            // A write over long polling, large enough to be cut into many segments.
            let text = String(repeating: "é", count: 3000)
            let p = try a.request("p", ["p": "/rooms/r2", "d": ["topic": .string(text)]])
            #expect(a.reply(p)?["d"]?["b"]?["s"] == "ok")
            #expect(a.push("d", path: "/rooms/r2")?["d"]?["b"]?["d"] == ["topic": .string(text)])
            // A large server message (over one 16384-character frame) arrives whole.
            let big = String(repeating: "x", count: 40_000)
            let w2 = b.request("p", ["p": "/rooms/r3", "d": .string(big)])
            #expect(b.reply(w2)?["d"]?["b"]?["s"] == "ok")
            #expect(a.push("d", path: "/rooms/r3")?["d"]?["b"]?["d"] == .string(big))
            // onDisconnect runs when the client reports leaving; the held poll is told to close.
            let o = try a.request("o", ["p": "/presence/a", "d": "offline"])
            #expect(a.reply(o)?["d"]?["b"]?["s"] == "ok")
            #expect(try a.disconnect() == 200)
            #expect(try eventually(server, "/presence/a.json?ns=lp1", equals: "offline"))
            for _ in 0..<200 where !a.isStopped { Thread.sleep(forTimeInterval: 0.02) }
            #expect(a.isStopped)
            #expect(a.closeCommands == 1)
            // The session is gone: its id no longer answers.
            #expect(try a.sendSegments([]) == 404)
            b.close()
        }
    }

    @Test func wrongPasswordNeitherReadsNorWrites() throws {
        try withServer { server in
            let a = try start(server, "lp2")
            a.startPolling()
            try authAsAdmin(a, server)
            let o = try a.request("o", ["p": "/presence/a", "d": "offline"])
            #expect(a.reply(o)?["d"]?["b"]?["s"] == "ok")
            // A request with the right id but a guessed password carries an admin write: refused, not applied.
            let forged = a.segment(
                ["t": "d", "d": ["r": 99, "a": "p", "b": ["p": "/stolen", "d": true]]], size: 1840,
                consume: false)
            #expect(try a.sendSegments(forged, password: "guessedPassword123") == 404)
            #expect(try a.disconnect(password: "guessedPassword123") == 404)
            let frame = try server.client().request(
                "GET", "/.lp?dframe=t&id=\(a.id)&pw=guessedPassword123&ns=lp2")
            #expect(frame.status == 404)
            #expect(
                try server.client().request("GET", "/.lp?id=nosuchsession&pw=\(a.password)&ser=1").status
                    == 404)
            #expect(try eventually(server, "/stolen.json?ns=lp2", equals: .null))
            // The real session is untouched: the refused disconnect ran no onDisconnect, and it still works.
            #expect(try eventually(server, "/presence/a.json?ns=lp2", equals: .null))
            let p = try a.request("p", ["p": "/mine", "d": 1])
            #expect(a.reply(p)?["d"]?["b"]?["s"] == "ok")
            #expect(a.waitFor(timeout: 0.5) { $0["d"]?["r"] == 99 } == nil)
            #expect(try a.disconnect() == 200)
            #expect(try eventually(server, "/presence/a.json?ns=lp2", equals: "offline"))
        }
    }

    @Test func outOfOrderAndRepeatedSegmentsAreReassembledOnce() throws {
        try withServer { server in
            let a = try start(server, "lp3")
            a.startPolling()
            let auth = a.segment(
                ["t": "d", "d": ["r": 1, "a": "gauth", "b": ["cred": .string(server.admin)]]], size: 10)
            #expect(auth.count >= 3)
            // Last segment first, then the rest in reverse, with a repeat of one already waiting.
            #expect(try a.sendSegments([auth[auth.count - 1]]) == 200)
            #expect(try a.sendSegments(Array(auth.dropLast().reversed()) + [auth[auth.count - 1]]) == 200)
            #expect(a.reply(1)?["d"]?["b"]?["s"] == "ok")
            // A repeat of a consumed segment (a retried request) is ignored, not handled twice.
            #expect(try a.sendSegments([auth[0]]) == 200)
            #expect(a.waitFor(timeout: 0.5) { $0["d"]?["r"] == 1 } == nil)
            // The next message, interleaved across two requests out of order.
            let write = a.segment(
                ["t": "d", "d": ["r": 2, "a": "p", "b": ["p": "/n", "d": 42]]], size: 12)
            #expect(try a.sendSegments(Array(write.suffix(from: 1))) == 200)
            #expect(try a.sendSegments([write[0]]) == 200)
            #expect(a.reply(2)?["d"]?["b"]?["s"] == "ok")
            #expect(try eventually(server, "/n.json?ns=lp3", equals: 42))
            #expect(try a.disconnect() == 200)
        }
    }

    @Test func badSegmentsEndTheSession() throws {
        try withServer { server in
            let a = try start(server, "lp4")
            #expect(try a.sendSegments([(0, 1, "not*base64")]) == 400)  // refused before the session is looked up
            #expect(try a.sendSegments([(1_000_000, 1, "e30.")]) == 413)  // far beyond the reassembly window
            #expect(try a.sendSegments([]) == 404)
            let b = try start(server, "lp4")
            #expect(try b.sendSegments([(0, 1, "bm90IGpzb24.")]) == 200)  // "not json": the session closes it
            #expect(try b.sendSegments([]) == 404)
        }
    }

    @Test func upgradeMovesTheSessionToAWebSocket() throws {
        try withServer { server in
            let a = try LongPollTestClient(port: server.port, namespace: "lp6")
            let hello = try #require(a.waitFor { $0["t"] == "c" })
            let handshakeID = try #require(hello["d"]?["d"]?["s"]?.stringValue)
            a.startPolling()
            try authAsAdmin(a, server)
            let q = try a.request("q", ["p": "/rooms", "h": ""])
            #expect(a.reply(q)?["d"]?["b"]?["s"] == "ok")
            // The SDK's secondary connection: /.ws?v=5&ns=lp6&s=<handshake s>. The server acks the switch first.
            let ws = try WireTestClient(port: server.port, namespace: "lp6&s=\(handshakeID)")
            #expect(ws.waitFor { $0["t"] == "c" }?["d"]?["t"] == "a")
            ws.sendRaw(#"{"t":"c","d":{"t":"p","d":{}}}"#)
            #expect(ws.waitFor { $0["t"] == "c" }?["d"]?["t"] == "o")
            // The client acks on the socket and writes there at once; that waits for the long poll's `n`.
            ws.sendRaw(#"{"t":"c","d":{"t":"a","d":{}}}"#)
            ws.sendRaw(#"{"t":"d","d":{"r":100,"a":"p","b":{"p":"/rooms/r1","d":"via socket"}}}"#)
            #expect(ws.waitFor(timeout: 0.3) { $0["d"]?["r"] == 100 } == nil)
            try a.send(["t": "c", "d": ["t": "n", "d": [:]]])
            // The long poll ends with `n` and `close`; the socket carries the session (auth, listens) from now on.
            #expect(a.waitFor { $0["t"] == "c" && $0["d"]?["t"] == "n" } != nil)
            for _ in 0..<200 where !a.isStopped { Thread.sleep(forTimeInterval: 0.02) }
            #expect(a.closeCommands >= 1)  // the held poll and the request that carried `n` may both be told
            #expect(ws.reply(100)?["d"]?["b"]?["s"] == "ok")
            #expect(ws.push("d", path: "/rooms/r1")?["d"]?["b"]?["d"] == "via socket")
            #expect(a.push("d", path: "/rooms/r1", timeout: 0.3) == nil)
            // onDisconnect now belongs to the socket: closing it applies the operation.
            ws.sendRaw(#"{"t":"d","d":{"r":101,"a":"o","b":{"p":"/presence/a","d":"offline"}}}"#)
            #expect(ws.reply(101)?["d"]?["b"]?["s"] == "ok")
            #expect(try eventually(server, "/presence/a.json?ns=lp6", equals: .null))
            ws.close()
            #expect(try eventually(server, "/presence/a.json?ns=lp6", equals: "offline"))
            // A socket naming no long-poll session is told to reset.
            let stray = try WireTestClient(port: server.port, namespace: "lp6&s=nosuchsession")
            #expect(stray.waitFor { $0["t"] == "c" }?["d"]?["t"] == "r")
        }
    }

    /// Stopping the daemon ends long-poll sessions at once: the session's onDisconnect is applied before the
    /// namespace closes (without the shutdown hook it never was), and a poll the server holds is answered with the
    /// close command (whether one is held at that instant depends on scheduling, so at most one close is seen).
    @Test func daemonStopClosesHeldPollsAndRunsOnDisconnect() throws {
        let server = try InProcessServer()
        let a = try start(server, "lp6")
        a.startPolling()
        try authAsAdmin(a, server)
        let o = try a.request("o", ["p": "/presence/a", "d": "gone"])
        #expect(a.reply(o)?["d"]?["b"]?["s"] == "ok")
        server.stop(removeData: false)
        defer { try? FileManager.default.removeItem(atPath: server.dataDirectory) }
        for _ in 0..<500 where !a.isStopped { Thread.sleep(forTimeInterval: 0.02) }
        #expect(a.isStopped)
        #expect(a.closeCommands <= 1)
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.dataDirectory = server.dataDirectory
        let restarted = try Daemon(configuration: configuration)
        try restarted.start()
        let thread = Thread { restarted.run() }
        thread.start()
        defer { restarted.stop() }
        let value = try HTTPClient(host: "127.0.0.1", port: restarted.port, timeoutSeconds: 10).json(
            "GET", "/presence/a.json?ns=lp6", headers: [("Authorization", "Bearer \(restarted.credentials.adminSecret)")])
        #expect(value.json == "gone")
    }

    @Test func idleSessionTimesOutAndRunsOnDisconnect() throws {
        let clock = ManualClock()
        let useClock: (inout ServerConfiguration) -> Void = { $0.loopClock = clock }
        try withServer(configure: useClock) { server in
            let a = try start(server, "lp5")
            a.startPolling()
            try authAsAdmin(a, server)
            let o = try a.request("o", ["p": "/presence/a", "d": "gone"])
            #expect(a.reply(o)?["d"]?["b"]?["s"] == "ok")
            #expect(try eventually(server, "/presence/a.json?ns=lp5", equals: .null))
            // The poller re-polls after each answer (advancing releases its held poll), and a late re-poll (a loaded
            // machine) refreshes the session's last-request time: so advance past the idle timeout on every look.
            let http = server.client()
            var gone = false
            for _ in 0..<200 where !gone {
                clock.advance(byMilliseconds: 10 * 60 * 1000)
                gone = try http.json("GET", "/presence/a.json?ns=lp5&auth=\(server.admin)").json == "gone"
                if !gone { Thread.sleep(forTimeInterval: 0.05) }
            }
            #expect(gone)
            #expect(try a.sendSegments([]) == 404)
        }
    }
}
