// WireSessionEndTests -- a session that closes its own WebSocket (a malformed message) cleans up like a lost one.

import CanopyCore
import CanopyNet
import Foundation
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

    /// Listeners of one location leave from every position (first, middle, last; by closing or unlistening, SSE
    /// and wire alike): the group keeps exactly the others, each told once of the next write.
    @Test func listenersLeavingFromAnyPositionLeaveTheOthersListening() throws {
        try withServer { server in
            let wire = WireProtocolTests()
            let (writer, _) = try wire.connectAdmins(server, "end4")
            var sockets: [WireTestClient] = []
            for _ in 0..<12 {
                let socket = try wire.connect(server, "end4")
                try wire.authAsAdmin(socket, server)
                #expect(socket.reply(socket.request("q", ["p": "/room", "h": ""]))?["d"]?["b"]?["s"] == "ok")
                sockets.append(socket)
            }
            let admin = [("Authorization", "Bearer \(server.admin)"), ("Accept", "text/event-stream")]
            var streams: [HTTPClient] = []
            for _ in 0..<4 {
                let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 1)
                #expect(try stream.openStream("/room.json?ns=end4", headers: admin).status == 200)
                #expect(readEvents(stream, until: "\n\n").hasPrefix("event: put"))
                streams.append(stream)
            }
            // Closing socket 0 moves the last listen (socket 11's) into its place; socket 11 then unlistens.
            let leaving: Set = [0, 5, 3]
            // The server closes these itself (a malformed message), so it has ended them once they are closed.
            for index in leaving.sorted() {
                sockets[index].sendRaw("not JSON")
                #expect(sockets[index].waitUntilClosed())
            }
            for index in [11, 7] {
                #expect(sockets[index].reply(sockets[index].request("n", ["p": "/room"]))?["d"]?["b"]?["s"] == "ok")
            }
            streams[0].close()
            streams[3].close()
            let listening = sockets.indices.filter { !leaving.contains($0) && $0 != 7 && $0 != 11 }
            for value in 1...2 {
                let write = writer.request("p", ["p": "/room/x", "d": .int(Int64(value))])
                #expect(writer.reply(write)?["d"]?["b"]?["s"] == "ok")
                for index in listening {
                    let socket = sockets[index]
                    #expect(socket.push("d", path: "/room/x")?["d"]?["b"]?["d"] == .int(Int64(value)), "\(index)")
                    #expect(socket.push("d", path: "/room/x", timeout: 0.1) == nil, "\(index)")
                }
                #expect(sockets[7].push("d", path: "/room/x", timeout: 0.1) == nil)
                #expect(sockets[11].push("d", path: "/room/x", timeout: 0.1) == nil)
                for index in [1, 2] {
                    let event = "event: put\ndata: {\"path\":\"/x\",\"data\":\(value)}\n\n"
                    #expect(readEvents(streams[index], until: "\n\n") == event, "stream \(index)")
                }
            }
        }
    }
}
