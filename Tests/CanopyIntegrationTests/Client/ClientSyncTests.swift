// ClientSyncTests -- CanopyClient against the in-process daemon: live sync, queries, rejections, transactions.

import CanopyClient
import CanopyCore
import CanopyServer
import Foundation
import Testing

@Suite struct ClientSyncTests {
    @Test(.timeLimit(.minutes(1))) func twoClientsSeeEachOthersWritesInOrder() async throws {
        let server = try InProcessServer()
        defer { server.stop() }
        let a = try clientDatabase(port: server.port, namespace: "sync1", token: server.admin)
        let b = try clientDatabase(port: server.port, namespace: "sync1", token: server.admin)
        let seenByA = SnapshotRecorder(a.ref("chat"))
        let seenByB = SnapshotRecorder(b.ref("chat"))
        #expect(await eventually { seenByA.last == .null && seenByB.last == .null })
        for i in 0..<10 { b.ref("chat/b\(i)").setValue(.int(Int64(i))) }
        let last = a.ref("chat/a0").setValue("from a")
        try await last.synced()
        #expect(await last.status == .synced)
        #expect(await eventually { seenByA.last?["b9"] == 9 && seenByA.last?["a0"] == "from a" })
        #expect(await eventually { seenByB.last?["a0"] == "from a" && seenByB.last?["b9"] == 9 })
        // In order: every snapshot A saw holds a prefix b0…bk of B's writes, growing one step at a time at most.
        var previous = -1
        for value in seenByA.values {
            let count = (0..<10).filter { value["b\($0)"] != nil }.count
            #expect((0..<count).allSatisfy { value["b\($0)"] == .int(Int64($0)) })
            #expect(count >= previous)
            previous = count
        }
        #expect(a.pendingWriteCount == 0)
        await a.close()
        await b.close()
    }

    @Test(.timeLimit(.minutes(1))) func localWritesFireAtOnceAndQueriesEvaluateLocally() async throws {
        let server = try InProcessServer()
        defer { server.stop() }
        let db = try clientDatabase(port: server.port, namespace: "sync2", token: server.admin)
        let scores = db.ref("scores")
        try await scores.setValue(["a": 1, "b": 5, "c": 3, "d": 9]).synced()
        let top2 = SnapshotRecorder(scores.orderByValue().limitToLast(2))
        #expect(await eventually { top2.last == ["b": 5, "d": 9] })
        #expect(top2.all.last?.children.map(\.key) == ["b", "d"])
        db.goOffline()
        scores.child("e").setValue(7)
        // Offline: the local view changes at once and the window is evaluated locally.
        #expect(await eventually { top2.last == ["e": 7, "d": 9] })
        #expect(db.pendingWriteCount == 1)
        db.goOnline()
        #expect(await eventually { db.pendingWriteCount == 0 })
        let other = try clientDatabase(port: server.port, namespace: "sync2", token: server.admin)
        let seen = try await other.ref("scores/e").getValue()
        #expect(seen.value == 7)
        await other.close()
        await db.close()
    }

    @Test(.timeLimit(.minutes(1))) func deniedWriteRollsBackAndIsReported() async throws {
        let rules = writeRules(#"{"rules": {".read": "auth != null", "open": {".write": "auth != null"}}}"#)
        let server = try InProcessServer { $0.rulesFile = rules }
        defer { server.stop() }
        let token = try server.daemon.credentials.mint(claims: ["uid": "u1"], ttlSeconds: 3600, now: SystemClock().nowMilliseconds())
        let db = try clientDatabase(port: server.port, namespace: "sync3", token: token)
        let root = SnapshotRecorder(db.ref())
        #expect(await eventually { root.last == .null })
        let allowed = db.ref("open/x").setValue(1)
        let denied = db.ref("closed/x").setValue(2)
        try await allowed.synced()
        await #expect(throws: ClientError.permissionDenied(path: "/closed/x")) { try await denied.synced() }
        #expect(await denied.status == .rejected(ClientError.permissionDenied(path: "/closed/x").userMessage))
        // The optimistic value was shown, then rolled back.
        #expect(root.values.contains { $0["closed"]?["x"] == 2 })
        #expect(await eventually { root.last == ["open": ["x": 1]] })
        #expect(db.pendingWriteCount == 0)
        await db.close()
    }

    @Test(.timeLimit(.minutes(1))) func deniedListenEndsTheStream() async throws {
        let rules = writeRules(#"{"rules": {"public": {".read": true}}}"#)
        let server = try InProcessServer { $0.rulesFile = rules }
        defer { server.stop() }
        let db = try clientDatabase(port: server.port, namespace: "sync4", token: nil)
        let secret = SnapshotRecorder(db.ref("secret"))
        let open = SnapshotRecorder(db.ref("public"))
        #expect(await eventually { secret.error != nil })
        #expect(secret.error == .permissionDenied(path: "/secret"))
        #expect(await eventually { open.last == .null })
        await db.close()
    }

    @Test(.timeLimit(.minutes(2))) func transactionsUnderContentionCountExactly() async throws {
        let server = try InProcessServer()
        defer { server.stop() }
        let a = try clientDatabase(port: server.port, namespace: "sync5", token: server.admin)
        let b = try clientDatabase(port: server.port, namespace: "sync5", token: server.admin)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for db in [a, b] {
                group.addTask {
                    for _ in 0..<10 {
                        let result = try await db.ref("counter").runTransaction { current in
                            .success(.int((current.int64Value ?? 0) + 1))
                        }
                        #expect(result.committed)
                    }
                }
            }
            try await group.waitForAll()
        }
        let final = try clientDatabase(port: server.port, namespace: "sync5", token: server.admin)
        #expect(try await final.ref("counter").getValue().value == 20)
        let aborted = try await a.ref("counter").runTransaction { _ in .abort }
        #expect(!aborted.committed)
        #expect(aborted.snapshot.value == 20)
        await final.close()
        await a.close()
        await b.close()
    }

    @Test(.timeLimit(.minutes(1))) func onDisconnectRunsWhenTheClientCloses() async throws {
        let server = try InProcessServer()
        defer { server.stop() }
        let watcher = try clientDatabase(port: server.port, namespace: "sync6", token: server.admin)
        let presence = SnapshotRecorder(watcher.ref("presence/u1"))
        let user = try clientDatabase(port: server.port, namespace: "sync6", token: server.admin)
        try await user.ref("presence/u1").setValue("online").synced()
        try await user.ref("presence/u1").onDisconnect().setValue("offline")
        try await user.ref("presence/u2").onDisconnect().setValue("gone")
        try await user.ref("presence/u2").onDisconnect().cancel()
        #expect(await eventually { presence.last == "online" })
        await user.close()
        #expect(await eventually { presence.last == "offline" })
        #expect(try await watcher.ref("presence/u2").getValue().exists == false)
        await watcher.close()
    }

    @Test(.timeLimit(.minutes(1))) func everyWriteKindAndServerValues() async throws {
        let server = try InProcessServer()
        defer { server.stop() }
        let db = try clientDatabase(port: server.port, namespace: "sync7", token: server.admin)
        let root = SnapshotRecorder(db.ref("room"))
        #expect(await eventually { root.last == .null })
        let message = db.ref("room/messages").childByAutoId()
        #expect(message.key?.count == 20)
        #expect(message.parent?.path == "/room/messages")
        message.setValue(["text": "hi", "at": Database.serverTimestamp])
        // The local estimate shows at once: a number, not the placeholder.
        #expect(await eventually { root.last?["messages"]?[message.key!]?["at"]?.int64Value != nil })
        db.ref("room").updateChildValues(["title": "Lobby", "meta/open": true, "visits": ServerValue.increment(2)])
        try await db.ref("room/gone").setValue(1).synced()
        try await db.ref("room/gone").removeValue().synced()
        #expect(await eventually { db.pendingWriteCount == 0 })
        let other = try clientDatabase(port: server.port, namespace: "sync7", token: server.admin)
        let seen = try await other.ref("room").getValue()
        #expect(seen.child("title").value == "Lobby")
        #expect(seen.child("meta/open").value == true)
        #expect(seen.child("visits").value == 2)
        #expect(!seen.hasChild("gone"))
        let at = try #require(seen.child("messages").child(message.key!).child("at").value.int64Value)
        #expect(abs(at - SystemClock().nowMilliseconds()) < 60_000)
        #expect(await eventually { root.last == seen.value })
        await other.close()
        await db.close()
    }

    @Test(.timeLimit(.minutes(1))) func rangeQueriesMatchTheServer() async throws {
        let server = try InProcessServer()
        defer { server.stop() }
        let db = try clientDatabase(port: server.port, namespace: "sync8", token: server.admin)
        try await db.ref("d").setValue([
            "a": ["h": 1], "b": ["h": 5], "c": ["h": 3], "e": ["h": 9], "f": ["h": 3],
        ]).synced()
        let middle = SnapshotRecorder(db.ref("d").orderByChild("h").startAt(3).endAt(5))
        let threes = SnapshotRecorder(db.ref("d").orderByChild("h").equalTo(3, key: "f"))
        let firstKeys = SnapshotRecorder(db.ref("d").orderByKey().startAfter("b").limitToFirst(2))
        #expect(await eventually { middle.last == ["b": ["h": 5], "c": ["h": 3], "f": ["h": 3]] })
        #expect(middle.all.last?.children.map(\.key) == ["c", "f", "b"])
        #expect(await eventually { threes.last == ["f": ["h": 3]] })
        #expect(await eventually { firstKeys.last == ["c": ["h": 3], "e": ["h": 9]] })
        // Another client's change moves children in and out of the windows.
        let other = try clientDatabase(port: server.port, namespace: "sync8", token: server.admin)
        try await other.ref("d/e/h").setValue(4).synced()
        try await other.ref("d/c").removeValue().synced()
        #expect(await eventually { middle.last == ["b": ["h": 5], "e": ["h": 4], "f": ["h": 3]] })
        #expect(await eventually { firstKeys.last == ["e": ["h": 4], "f": ["h": 3]] })
        await other.close()
        await db.close()
    }
}
