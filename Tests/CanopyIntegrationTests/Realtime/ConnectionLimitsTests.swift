// ConnectionLimitsTests -- what one wire connection may hold (listens, onDisconnect operations) below the server's
// totals, and that a connection's onDisconnect operations run without holding up the others
// (Architecture.md#Bounded-resources).

import CanopyCore
import CanopyNet
import Foundation
import Testing

@Suite struct ConnectionLimitsTests {
    func connectAdmin(_ server: InProcessServer, _ ns: String) throws -> WireTestClient {
        let client = try WireTestClient(port: server.port, namespace: ns)
        _ = try #require(client.waitFor { $0["t"] == "c" })
        let r = client.request("gauth", ["cred": .string(server.admin)])
        #expect(client.reply(r)?["d"]?["b"]?["s"] == "ok")
        return client
    }

    func status(_ client: WireTestClient, _ r: Int64) -> JSONValue? {
        client.reply(r)?["d"]?["b"]?["s"]
    }

    @Test func listensBeyondTheConnectionsLimitAreRefusedAndTheConnectionGoesOn() throws {
        try withServer(configure: { $0.maxListensPerConnection = 2 }) { server in
            let a = try connectAdmin(server, "cl1")
            // Sent back to back: listens still waiting to join count too.
            let q1 = a.request("q", ["p": "/a", "h": ""])
            let q2 = a.request("q", ["p": "/b", "h": ""])
            let q3 = a.request("q", ["p": "/c", "h": ""])
            #expect(status(a, q1) == "ok")
            #expect(status(a, q2) == "ok")
            let refused = try #require(a.reply(q3))
            #expect(refused["d"]?["b"]?["s"] == "unavailable")
            #expect(refused["d"]?["b"]?["d"]?.stringValue?.contains("at most 2") == true)
            // Listening again where it already listens replaces that listen, within the limit.
            #expect(status(a, a.request("q", ["p": "/a", "h": ""])) == "ok")
            // The connection serves everything else, and an unlisten frees a slot.
            #expect(status(a, a.request("p", ["p": "/a", "d": 1])) == "ok")
            #expect(status(a, a.request("n", ["p": "/b"])) == "ok")
            #expect(status(a, a.request("q", ["p": "/c", "h": ""])) == "ok")
        }
    }

    @Test func listensAreBoundedAcrossConnections() throws {
        try withServer(configure: {
            $0.maxListensPerConnection = 2
            $0.maxListens = 3
        }) { server in
            let a = try connectAdmin(server, "cl2")
            let b = try connectAdmin(server, "cl2")
            #expect(status(a, a.request("q", ["p": "/a1", "h": ""])) == "ok")
            #expect(status(a, a.request("q", ["p": "/a2", "h": ""])) == "ok")
            #expect(status(b, b.request("q", ["p": "/b1", "h": ""])) == "ok")
            let refused = try #require(b.reply(b.request("q", ["p": "/b2", "h": ""])))
            #expect(refused["d"]?["b"]?["s"] == "unavailable")
            #expect(refused["d"]?["b"]?["d"]?.stringValue?.contains("on this server") == true)
            // A closed connection gives its listens back.
            a.close()
            var joined = false
            for _ in 0..<200 where !joined {
                joined = status(b, b.request("q", ["p": "/b2", "h": ""])) == "ok"
                if !joined { Thread.sleep(forTimeInterval: 0.02) }
            }
            #expect(joined)
        }
    }

    @Test func onDisconnectOperationsBeyondTheLimitsAreRefused() throws {
        try withServer(configure: {
            $0.maxOnDisconnectPerConnection = 2
            $0.maxOnDisconnectOperations = 3
        }) { server in
            let a = try connectAdmin(server, "cl3")
            let b = try connectAdmin(server, "cl3")
            #expect(status(a, a.request("o", ["p": "/x/1", "d": 1])) == "ok")
            #expect(status(a, a.request("om", ["p": "/x", "d": ["2": 2]])) == "ok")
            let refused = try #require(a.reply(a.request("o", ["p": "/x/3", "d": 3])))
            #expect(refused["d"]?["b"]?["s"] == "unavailable")
            #expect(
                refused["d"]?["b"]?["d"]?.stringValue?.contains("on this connection (at most 2)") == true)
            #expect(status(b, b.request("o", ["p": "/y/1", "d": 1])) == "ok")
            let total = try #require(b.reply(b.request("o", ["p": "/y/2", "d": 2])))
            #expect(total["d"]?["b"]?["d"]?.stringValue?.contains("on this server (at most 3)") == true)
            // Cancelling frees room; the connection still works and its accepted operations still run.
            #expect(status(a, a.request("oc", ["p": "/x/1"])) == "ok")
            #expect(status(a, a.request("o", ["p": "/x/3", "d": 3])) == "ok")
            a.close()
            var seen: JSONValue?
            for _ in 0..<200 where seen != ["2": 2, "3": 3] {
                seen = b.reply(b.request("g", ["p": "/x", "q": [:]]))?["d"]?["b"]?["d"]
                if seen != ["2": 2, "3": 3] { Thread.sleep(forTimeInterval: 0.02) }
            }
            #expect(seen == ["2": 2, "3": 3])
        }
    }

    @Test(.timeLimit(.minutes(2))) func manyOnDisconnectOperationsDoNotHoldUpOtherConnections() throws {
        let count = 20_000
        try withServer(configure: { $0.maxOnDisconnectPerConnection = count }) { server in
            let a = try connectAdmin(server, "cl4")
            let b = try connectAdmin(server, "cl4")
            var last: Int64 = 0
            for index in 0..<count {
                last = a.request("o", ["p": .string("/d/\(index)"), "d": .int(Int64(index))])
            }
            #expect(a.waitFor(timeout: 90) { $0["d"]?["r"] == .int(last) }?["d"]?["b"]?["s"] == "ok")
            a.close()
            // As soon as b sees the first operation applied, the last one is not yet: the loop served b between
            // chunks of a's operations (it used to run all of them in one pass).
            var started = false
            for _ in 0..<2000 where !started {
                started = b.reply(b.request("g", ["p": "/d/0", "q": [:]]))?["d"]?["b"]?["d"] == 0
            }
            #expect(started)
            let lastValue = b.reply(b.request("g", ["p": .string("/d/\(count - 1)"), "q": [:]]))?["d"]?[
                "b"]?["d"]
            #expect(lastValue == .null)
            // And all of them are performed, in order.
            var finished = false
            for _ in 0..<1000 where !finished {
                finished =
                    b.reply(b.request("g", ["p": .string("/d/\(count - 1)"), "q": [:]]))?["d"]?["b"]?["d"]
                    == .int(Int64(count - 1))
                if !finished { Thread.sleep(forTimeInterval: 0.02) }
            }
            #expect(finished)
        }
    }

    /// The presence pattern: a client's onDisconnect sets `false`, it reconnects and sets `true`. Even while the
    /// closed connection's operations are still running in chunks, the new write lands after them.
    @Test(.timeLimit(.minutes(2))) func aWriteAfterADisconnectLandsAfterItsOperations() throws {
        let count = 5_000
        try withServer(configure: { $0.maxOnDisconnectPerConnection = count + 1 }) { server in
            let a = try connectAdmin(server, "cl5")
            let b = try connectAdmin(server, "cl5")
            for index in 0..<count { _ = a.request("o", ["p": .string("/junk/\(index)"), "d": .int(Int64(index))]) }
            let last = a.request("o", ["p": "/presence/a", "d": false])
            #expect(a.waitFor(timeout: 90) { $0["d"]?["r"] == .int(last) }?["d"]?["b"]?["s"] == "ok")
            a.close()
            // The server has started on a's operations (the first is applied) ...
            var started = false
            for _ in 0..<5000 where !started {
                started = b.reply(b.request("g", ["p": "/junk/0", "q": [:]]))?["d"]?["b"]?["d"] == 0
            }
            #expect(started)
            // ... when the reconnected client says it is present.
            #expect(status(b, b.request("p", ["p": "/presence/a", "d": true])) == "ok")
            var finished = false
            for _ in 0..<1000 where !finished {
                finished =
                    b.reply(b.request("g", ["p": .string("/junk/\(count - 1)"), "q": [:]]))?["d"]?["b"]?["d"]
                    == .int(Int64(count - 1))
                if !finished { Thread.sleep(forTimeInterval: 0.02) }
            }
            #expect(finished)
            #expect(b.reply(b.request("g", ["p": "/presence/a", "q": [:]]))?["d"]?["b"]?["d"] == true)
        }
    }
}
