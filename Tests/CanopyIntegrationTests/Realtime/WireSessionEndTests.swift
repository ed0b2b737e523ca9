// WireSessionEndTests -- a session that closes its own WebSocket (a malformed message) cleans up like a lost one.

import CanopyCore
import Testing

@Suite struct WireSessionEndTests {
    @Test func malformedMessageClosesAndRunsOnDisconnect() throws {
        try withServer { server in
            let protocolTests = WireProtocolTests()
            let a = try protocolTests.connect(server, "end1")
            let b = try protocolTests.connect(server, "end1")
            try protocolTests.authAsAdmin(a, server)
            try protocolTests.authAsAdmin(b, server)
            var r = a.request("p", ["p": "/presence/u1", "d": true])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            r = a.request("o", ["p": "/presence/u1", "d": .null])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            // a also listens: once it is gone its listen must not keep a place in the fan-out.
            r = a.request("q", ["p": "/presence", "h": ""])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            let q = b.request("q", ["p": "/presence", "h": ""])
            #expect(b.reply(q)?["d"]?["b"]?["s"] == "ok")
            a.sendRaw("this is not JSON")
            #expect(b.push("d", path: "/presence/u1")?["d"]?["b"]?["d"] == .null)
            // The rest of the server carries on: b still writes and hears its own change.
            let w = b.request("p", ["p": "/presence/u2", "d": 1])
            #expect(b.reply(w)?["d"]?["b"]?["s"] == "ok")
            #expect(b.push("d", path: "/presence/u2")?["d"]?["b"]?["d"] == 1)
        }
    }

    /// The protocol is JSON text: a binary message closes the socket with 1003 (unsupported data), and the
    /// session ends like a lost one (its onDisconnect runs).
    @Test func binaryMessageClosesWith1003() throws {
        try withServer { server in
            let protocolTests = WireProtocolTests()
            let a = try protocolTests.connect(server, "end2")
            let b = try protocolTests.connect(server, "end2")
            try protocolTests.authAsAdmin(a, server)
            try protocolTests.authAsAdmin(b, server)
            var r = a.request("p", ["p": "/presence/u1", "d": true])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            r = a.request("o", ["p": "/presence/u1", "d": .null])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
            let q = b.request("q", ["p": "/presence", "h": ""])
            #expect(b.reply(q)?["d"]?["b"]?["s"] == "ok")
            a.sendBinary([0x7B, 0x7D])
            #expect(a.waitUntilClosed())
            #expect(a.serverCloseCode == 1003)
            #expect(b.push("d", path: "/presence/u1")?["d"]?["b"]?["d"] == .null)
        }
    }
}
