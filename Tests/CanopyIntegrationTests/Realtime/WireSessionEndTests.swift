// WireSessionEndTests -- a session that closes its own WebSocket (a malformed message) cleans up like a lost one.

import CanopyCore
import Testing

@Suite struct WireSessionEndTests {
    /// Two admin sockets: a holds /presence/u1 = true with an onDisconnect that removes it; b listens on /presence.
    func presence(_ server: InProcessServer, _ ns: String) throws -> (a: WireTestClient, b: WireTestClient) {
        let (a, b) = try WireProtocolTests().connectAdmins(server, ns)
        var r = a.request("p", ["p": "/presence/u1", "d": true])
        #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
        r = a.request("o", ["p": "/presence/u1", "d": .null])
        #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
        r = b.request("q", ["p": "/presence", "h": ""])
        #expect(b.reply(r)?["d"]?["b"]?["s"] == "ok")
        return (a, b)
    }

    @Test func malformedMessageClosesAndRunsOnDisconnect() throws {
        try withServer { server in
            let (a, b) = try presence(server, "end1")
            // a also listens: once it is gone its listen must not keep a place in the fan-out.
            let r = a.request("q", ["p": "/presence", "h": ""])
            #expect(a.reply(r)?["d"]?["b"]?["s"] == "ok")
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
            let (a, b) = try presence(server, "end2")
            a.sendBinary([0x7B, 0x7D])
            #expect(a.waitUntilClosed())
            #expect(a.serverCloseCode == 1003)
            #expect(b.push("d", path: "/presence/u1")?["d"]?["b"]?["d"] == .null)
        }
    }
}
