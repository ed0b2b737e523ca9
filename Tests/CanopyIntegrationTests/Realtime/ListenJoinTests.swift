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

    /// A server whose WAL sync is held while a write is in flight.
    private struct HeldSync {
        let server: InProcessServer
        let gate: SyncGate
        let writer: WireTestClient
        /// Listens on /room since before the held write, so it sees each write as it is pushed.
        let early: WireTestClient
        /// The request number of the held write.
        let write: Int64
    }

    /// Runs `body` once /room/a = 1 is stored and /room/b = 2 was pushed to `early` with its sync held: listens
    /// sent until `gate.release()` wait for it.
    private func withHeldSync(_ body: (HeldSync) throws -> Void) throws {
        let gate = SyncGate()
        try withServer(configure: { $0.beforeWALSync = { gate.beforeSync() } }) { server in
            let (writer, early) = try wire.connectAdmins(server, "join")
            #expect(writer.reply(writer.request("p", ["p": "/room/a", "d": 1]))?["d"]?["b"]?["s"] == "ok")
            #expect(early.reply(early.request("q", ["p": "/room", "h": ""]))?["d"]?["b"]?["s"] == "ok")
            gate.arm()
            let write = writer.request("p", ["p": "/room/b", "d": 2])
            #expect(gate.waitUntilHeld())
            #expect(early.push("d", path: "/room/b") != nil)
            try body(HeldSync(server: server, gate: gate, writer: writer, early: early, write: write))
        }
    }

    private func admin(_ server: InProcessServer) throws -> WireTestClient {
        let client = try wire.connect(server, "join")
        try wire.authAsAdmin(client, server)
        return client
    }

    /// Whether `client`'s request `r` was answered `status`.
    private func answered(_ client: WireTestClient, _ r: Int64, _ status: String) -> Bool {
        client.reply(r)?["d"]?["b"]?["s"] == .string(status)
    }

    @Test func aWireListenStartsFromEveryWritePushedBeforeItJoined() throws {
        try withHeldSync { held in
            let late = try admin(held.server)
            // The late listen now waits for the held batch. A stats request is answered at once: its reply means
            // the listen sent ahead of it on the same socket has been taken.
            let listen = late.request("q", ["p": "/room", "h": ""])
            #expect(answered(late, late.request("s", ["c": [:]]), "ok"))
            // The next batch writes c: committed and pushed to the group while the held sync still waits.
            let c = held.writer.request("p", ["p": "/room/c", "d": 3])
            #expect(held.early.push("d", path: "/room/c") != nil)
            held.gate.release()

            #expect(answered(held.writer, held.write, "ok"))
            #expect(answered(held.writer, c, "ok"))
            #expect(answered(late, listen, "ok"))
            let start = try #require(late.push("d", path: "/room"))
            #expect(start["d"]?["b"]?["d"] == ["a": 1, "b": 2, "c": 3])
            // ... and c is not delivered a second time.
            #expect(late.waitFor(timeout: 0.3) { $0["d"]?["a"] == "d" } == nil)
        }
    }

    @Test func anEventStreamStartsFromEveryWritePushedBeforeItJoined() throws {
        try withHeldSync { held in
            // The stream's response head is sent when the request is taken; its first event waits for the held
            // batch. (A short socket timeout: the last check waits for nothing more to arrive.)
            let stream = HTTPClient(host: "127.0.0.1", port: held.server.port, timeoutSeconds: 1)
            let head = try stream.openStream(
                "/room.json?ns=join",
                headers: [("Authorization", "Bearer \(held.server.admin)"), ("Accept", "text/event-stream")])
            #expect(head.status == 200)
            let c = held.writer.request("p", ["p": "/room/c", "d": 3])
            #expect(held.early.push("d", path: "/room/c") != nil)
            held.gate.release()

            #expect(answered(held.writer, held.write, "ok"))
            #expect(answered(held.writer, c, "ok"))
            let first = #"event: put"# + "\n" + #"data: {"path":"/","data":{"a":1,"b":2,"c":3}}"# + "\n\n"
            #expect(readEvents(stream, until: "\n\n") == first)
            #expect(readEvents(stream, until: "\n\n", timeout: 0.5).isEmpty)
        }
    }

    @Test func anUnlistenSentWhileItsListenWaitsEndsIt() throws {
        try withHeldSync { held in
            let client = try admin(held.server)
            let listen = client.request("q", ["p": "/room", "h": ""])
            let unlisten = client.request("n", ["p": "/room"])
            #expect(answered(client, client.request("s", ["c": [:]]), "ok"))
            held.gate.release()
            #expect(answered(held.writer, held.write, "ok"))
            // Replies keep request order: the listen's comes first.
            let first = client.waitFor { $0["d"]?["r"] == .int(listen) || $0["d"]?["r"] == .int(unlisten) }
            #expect(first?["d"]?["r"] == .int(listen))
            #expect(answered(client, unlisten, "ok"))
            // The listen is gone: a later write reaches no one on this socket.
            #expect(answered(held.writer, held.writer.request("p", ["p": "/room/x", "d": 1]), "ok"))
            #expect(client.push("d", path: "/room/x", timeout: 0.3) == nil)
        }
    }

    @Test func aListenWhoseAuthEndsWhileItWaitsIsRefused() throws {
        try withHeldSync { held in
            let client = try admin(held.server)
            let listen = client.request("q", ["p": "/room", "h": ""])
            // Without rules only the admin may read; after `unauth` this socket is anonymous.
            #expect(answered(client, client.request("unauth", [:]), "ok"))
            held.gate.release()
            #expect(answered(held.writer, held.write, "ok"))
            #expect(answered(client, listen, "permission_denied"))
            #expect(client.push("d", timeout: 0.3) == nil)
        }
    }

    @Test func anEventStreamWhoseRulesChangeWhileItWaitsIsCancelled() throws {
        try withHeldSync { held in
            let c = held.server.client()
            let admin = [("Authorization", "Bearer \(held.server.admin)")]
            func setRules(_ rules: String) throws {
                #expect(try c.json("PUT", "/.settings/rules.json?ns=join", rules, headers: admin).status == 200)
            }
            try setRules(#"{"rules":{".read":true,".write":false}}"#)
            let stream = HTTPClient(host: "127.0.0.1", port: held.server.port, timeoutSeconds: 2)
            let head = try stream.openStream("/room.json?ns=join", headers: [("Accept", "text/event-stream")])
            #expect(head.status == 200)
            try setRules(#"{"rules":{".read":false,".write":false}}"#)
            held.gate.release()
            #expect(answered(held.writer, held.write, "ok"))
            #expect(readEvents(stream, until: "\n\n") == "event: cancel\ndata: \"Permission denied\"\n\n")
        }
    }
}
