// ListenJoinTests -- a listener that joins while an earlier write is still being synced misses no later write.
//
// The daemon pushes a batch to listeners once it is in the WAL and acknowledges it after the sync, so a later
// batch can be pushed before an earlier one is durable. A new listen first waits until everything written before
// it is durable. If it then started from the tree of the moment it asked, a batch pushed to the group in between
// would never reach it. Likewise an unlisten, a changed auth or changed rules that arrive while the listen waits
// must still apply to it. These tests hold the sync thread (the store's test hook) to force those orders.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization
import Testing

/// Holds a namespace store's next WAL sync until released (install `beforeSync` as the daemon's sync hook).
final class SyncGate: Sendable {
    private let armed = Atomic<Bool>(false)
    private let entered = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    /// The next sync waits in `beforeSync` until `release()`.
    func arm() { armed.store(true, ordering: .sequentiallyConsistent) }

    func beforeSync() {
        guard armed.exchange(false, ordering: .sequentiallyConsistent) else { return }
        entered.signal()
        _ = released.wait(timeout: .now() + 20)
    }

    /// Whether the sync thread reached the hook (and now waits there).
    func waitUntilHeld() -> Bool { entered.wait(timeout: .now() + 5) == .success }

    func release() { released.signal() }
}

@Suite struct ListenJoinTests {
    private let wire = WireProtocolTests()

    @Test func aWireListenStartsFromEveryWritePushedBeforeItJoined() throws {
        let gate = SyncGate()
        try withServer(configure: { $0.beforeWALSync = { gate.beforeSync() } }) { server in
            let (writer, early) = try wire.connectAdmins(server, "join")
            let late = try wire.connect(server, "join")
            try wire.authAsAdmin(late, server)
            #expect(writer.reply(writer.request("p", ["p": "/room/a", "d": 1]))?["d"]?["b"]?["s"] == "ok")
            #expect(early.reply(early.request("q", ["p": "/room", "h": ""]))?["d"]?["b"]?["s"] == "ok")

            // Batch k writes b; it is pushed, then its sync is held.
            gate.arm()
            let b = writer.request("p", ["p": "/room/b", "d": 2])
            #expect(gate.waitUntilHeld())
            #expect(early.push("d", path: "/room/b") != nil)
            // The late listen now waits for batch k. A stats request is answered at once: its reply means the
            // listen sent ahead of it on the same socket has been taken.
            let listen = late.request("q", ["p": "/room", "h": ""])
            #expect(late.reply(late.request("s", ["c": [:]]))?["d"]?["b"]?["s"] == "ok")
            // Batch k+1 writes c: committed and pushed to the group while k's sync is still held.
            let c = writer.request("p", ["p": "/room/c", "d": 3])
            #expect(early.push("d", path: "/room/c") != nil)
            gate.release()

            #expect(writer.reply(b)?["d"]?["b"]?["s"] == "ok")
            #expect(writer.reply(c)?["d"]?["b"]?["s"] == "ok")
            #expect(late.reply(listen)?["d"]?["b"]?["s"] == "ok")
            let start = try #require(late.push("d", path: "/room"))
            #expect(start["d"]?["b"]?["d"] == ["a": 1, "b": 2, "c": 3])
            // ... and c is not delivered a second time.
            #expect(late.waitFor(timeout: 0.3) { $0["d"]?["a"] == "d" } == nil)
        }
    }

    @Test func anEventStreamStartsFromEveryWritePushedBeforeItJoined() throws {
        let gate = SyncGate()
        try withServer(configure: { $0.beforeWALSync = { gate.beforeSync() } }) { server in
            let (writer, early) = try wire.connectAdmins(server, "join")
            #expect(writer.reply(writer.request("p", ["p": "/room/a", "d": 1]))?["d"]?["b"]?["s"] == "ok")
            #expect(early.reply(early.request("q", ["p": "/room", "h": ""]))?["d"]?["b"]?["s"] == "ok")

            gate.arm()
            let b = writer.request("p", ["p": "/room/b", "d": 2])
            #expect(gate.waitUntilHeld())
            #expect(early.push("d", path: "/room/b") != nil)
            // The stream's response head is sent when the request is taken; its first event waits for batch k.
            // (A short socket timeout: the last check waits for nothing more to arrive.)
            let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 1)
            let head = try stream.openStream(
                "/room.json?ns=join",
                headers: [("Authorization", "Bearer \(server.admin)"), ("Accept", "text/event-stream")])
            #expect(head.status == 200)
            let c = writer.request("p", ["p": "/room/c", "d": 3])
            #expect(early.push("d", path: "/room/c") != nil)
            gate.release()

            #expect(writer.reply(b)?["d"]?["b"]?["s"] == "ok")
            #expect(writer.reply(c)?["d"]?["b"]?["s"] == "ok")
            let first = #"event: put"# + "\n" + #"data: {"path":"/","data":{"a":1,"b":2,"c":3}}"# + "\n\n"
            #expect(readEvents(stream, until: "\n\n") == first)
            #expect(readEvents(stream, until: "\n\n", timeout: 0.5).isEmpty)
        }
    }

    /// Starts a write whose sync is held, after it was pushed to `early`'s listen on /room: listens sent until
    /// `gate.release()` wait for it.
    private func holdASync(
        _ gate: SyncGate, _ server: InProcessServer
    ) throws -> (writer: WireTestClient, held: Int64) {
        let (writer, early) = try wire.connectAdmins(server, "join")
        #expect(early.reply(early.request("q", ["p": "/room", "h": ""]))?["d"]?["b"]?["s"] == "ok")
        gate.arm()
        let held = writer.request("p", ["p": "/room/b", "d": 2])
        #expect(gate.waitUntilHeld())
        #expect(early.push("d", path: "/room/b") != nil)
        return (writer, held)
    }

    @Test func anUnlistenSentWhileItsListenWaitsEndsIt() throws {
        let gate = SyncGate()
        try withServer(configure: { $0.beforeWALSync = { gate.beforeSync() } }) { server in
            let (writer, held) = try holdASync(gate, server)
            let client = try wire.connect(server, "join")
            try wire.authAsAdmin(client, server)
            let listen = client.request("q", ["p": "/room", "h": ""])
            let unlisten = client.request("n", ["p": "/room"])
            #expect(client.reply(client.request("s", ["c": [:]]))?["d"]?["b"]?["s"] == "ok")
            gate.release()
            #expect(writer.reply(held)?["d"]?["b"]?["s"] == "ok")
            // Replies keep request order: the listen's comes first.
            let first = client.waitFor { $0["d"]?["r"] == .int(listen) || $0["d"]?["r"] == .int(unlisten) }
            #expect(first?["d"]?["r"] == .int(listen))
            #expect(client.reply(unlisten)?["d"]?["b"]?["s"] == "ok")
            // The listen is gone: a later write reaches no one on this socket.
            #expect(writer.reply(writer.request("p", ["p": "/room/x", "d": 1]))?["d"]?["b"]?["s"] == "ok")
            #expect(client.push("d", path: "/room/x", timeout: 0.3) == nil)
        }
    }

    @Test func aListenWhoseAuthEndsWhileItWaitsIsRefused() throws {
        let gate = SyncGate()
        try withServer(configure: { $0.beforeWALSync = { gate.beforeSync() } }) { server in
            let (writer, held) = try holdASync(gate, server)
            let client = try wire.connect(server, "join")
            try wire.authAsAdmin(client, server)
            let listen = client.request("q", ["p": "/room", "h": ""])
            // Without rules only the admin may read; after `unauth` this socket is anonymous.
            #expect(client.reply(client.request("unauth", [:]))?["d"]?["b"]?["s"] == "ok")
            gate.release()
            #expect(writer.reply(held)?["d"]?["b"]?["s"] == "ok")
            #expect(client.reply(listen)?["d"]?["b"]?["s"] == "permission_denied")
            #expect(client.push("d", timeout: 0.3) == nil)
        }
    }

    @Test func anEventStreamWhoseRulesChangeWhileItWaitsIsCancelled() throws {
        let gate = SyncGate()
        try withServer(configure: { $0.beforeWALSync = { gate.beforeSync() } }) { server in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            func setRules(_ rules: String) throws {
                #expect(try c.json("PUT", "/.settings/rules.json?ns=join", rules, headers: admin).status == 200)
            }
            try setRules(#"{"rules":{".read":true,".write":false}}"#)
            let (writer, held) = try holdASync(gate, server)
            let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 2)
            let head = try stream.openStream("/room.json?ns=join", headers: [("Accept", "text/event-stream")])
            #expect(head.status == 200)
            try setRules(#"{"rules":{".read":false,".write":false}}"#)
            gate.release()
            #expect(writer.reply(held)?["d"]?["b"]?["s"] == "ok")
            #expect(readEvents(stream, until: "\n\n") == "event: cancel\ndata: \"Permission denied\"\n\n")
        }
    }
}
