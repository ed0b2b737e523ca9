// PreparedFanOutTests -- a publish's fan-out is worked out while the store writes it (`RealtimeHub.prepare`), and
// holds only for the listen groups of that moment: a listener whose group is made while the publish is being
// written still receives the publish.
//
// A listen joins its group once everything written before it is durable. So the store's hooks force the order: an
// earlier write's sync is held (the listen waits for it), the publish is handed to the store and its COMMIT held,
// then the sync is let go (the listen joins, making its group, and starts from the tree before the publish), and
// then the COMMIT (the publish becomes visible and is fanned out).

import CanopyCore
import CanopyNet
import Foundation
import Synchronization
import Testing

@Suite struct PreparedFanOutTests {
    private let wire = WireProtocolTests()

    @Test(.timeLimit(.minutes(1))) func aGroupMadeWhileThePublishIsWrittenStillReceivesIt() throws {
        let sync = SyncGate()
        let commit = SyncGate()
        try withServer(configure: {
            $0.beforeWALSync = { sync.beforeSync() }
            $0.beforeStoreCommit = { commit.beforeSync() }
        }) { server in
            let ns = "prepared"
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let c = server.client()
            let item = #"{"order":1,"type":"text","checkAll":true,"text":"hello"}"#
            #expect(try c.json("PUT", "/private/admin/pendingContent/welcome.json?ns=\(ns)", item, headers: admin).status == 200)
            let (writer, late) = try wire.connectAdmins(server, ns)
            // A group elsewhere, so that the namespace has listeners when the publish is handed to the store.
            #expect(writer.reply(writer.request("q", ["p": "/chat", "h": ""]))?["d"]?["b"]?["s"] == "ok")

            // An earlier write whose sync is held: a listen sent now waits for it.
            sync.arm()
            let earlier = writer.request("p", ["p": "/chat/m1", "d": "hi"])
            #expect(sync.waitUntilHeld())
            let listen = late.request("q", ["p": "/public/admin/content", "h": ""])
            // Answered at once: the listen sent before it on the same socket has been taken.
            #expect(late.reply(late.request("s", ["c": [:]]))?["d"]?["b"]?["s"] == "ok")

            // The publish is handed to the store (and its fan-out worked out); its COMMIT is held.
            commit.arm()
            let published = DispatchSemaphore(value: 0)
            let status = Mutex<Int?>(nil)
            Thread {
                let answer = try? server.client().json("POST", "/.canopy/publish?ns=\(ns)", headers: admin)
                status.withLock { $0 = answer?.status }
                published.signal()
            }.start()
            #expect(commit.waitUntilHeld())

            // The listen joins now, making the group for /public/admin/content, from the tree before the publish.
            sync.release()
            #expect(writer.reply(earlier)?["d"]?["b"]?["s"] == "ok")
            #expect(late.reply(listen)?["d"]?["b"]?["s"] == "ok")
            let start = try #require(late.push("d", path: "/public/admin/content"))
            #expect(start["d"]?["b"]?["d"] == .null)

            // The publish becomes visible: its item reaches the new group.
            commit.release()
            #expect(published.wait(timeout: .now() + 20) == .success)
            #expect(status.withLock { $0 } == 200)
            let event = try #require(late.waitFor { $0["d"]?["a"] == "d" || $0["d"]?["a"] == "m" })
            let body = try #require(event["d"]?["b"])
            // The whole location, or the item alone at its own path.
            let at = body["p"]?.stringValue.map { $0.hasPrefix("/") ? String($0.dropFirst()) : $0 }
            let value = at == "public/admin/content" ? body["d"]?["welcome"] : body["d"]
            #expect(value?["text"] == "hello", "\(event)")
        }
    }
}
