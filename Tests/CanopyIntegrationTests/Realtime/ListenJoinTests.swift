// ListenJoinTests -- a listener that joins while an earlier write is still being synced misses no later write.
//
// The daemon pushes a batch to listeners once it is in the WAL and acknowledges it after the sync, so a later
// batch can be pushed before an earlier one is durable. A new listen first waits until everything written before
// it is durable. If it then started from the tree of the moment it asked, a batch pushed to the group in between
// would never reach it. These tests hold the sync thread (the store's test hook) to force exactly that order.

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
}
