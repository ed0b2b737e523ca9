// ClientOfflineTests -- CanopyClient across daemon restarts: queued writes land once, caches answer offline.

import CanopyClient
import CanopyCore
import CanopyServer
import Foundation
import Synchronization
import Testing

@Suite struct ClientOfflineTests {
    /// The real daemon binary on a data directory (and a fixed port when restarting it in place).
    func daemon(port: Int = 0, data: String) throws -> ServerProcess {
        try ServerProcess(dataDirectory: data, extraArguments: port == 0 ? [] : ["--port", String(port)])
    }

    @Test(.timeLimit(.minutes(1))) func writeMadeWhileTheDaemonIsDownLandsExactlyOnce() async throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let first = try daemon(data: data)
        let port = first.port
        let admin = first.admin
        let cache = URL(fileURLWithPath: makeTemporaryDirectory())
        let db = try clientDatabase(port: port, namespace: "off1", token: admin, cache: cache)
        let connected = SnapshotRecorder(db.ref(".info/connected"))
        let log = SnapshotRecorder(db.ref("log"))
        #expect(await eventually { connected.last == true && log.last == .null })

        first.terminate()
        #expect(await eventually { connected.last == false })
        db.ref("log").childByAutoId().setValue("entry")
        db.ref("count").setValue(ServerValue.increment(1))
        db.ref("status").setValue("queued")
        #expect(db.pendingWriteCount == 3)
        // Local first: the listener sees the queued entry at once.
        #expect(await eventually { log.last?.members?.count == 1 })

        let second = try daemon(port: port, data: data)
        defer { second.terminate() }
        #expect(await eventually { db.pendingWriteCount == 0 })
        #expect(await eventually { connected.last == true })
        // The first `false` is seen only if the recorder subscribed before the first connection was made.
        #expect(Array(connected.values.drop { $0 == false }) == [true, false, true])

        let other = try clientDatabase(port: port, namespace: "off1", token: admin)
        #expect(try await other.ref("log").getValue().childrenCount == 1)
        #expect(try await other.ref("count").getValue().value == 1)
        #expect(try await other.ref("status").getValue().value == "queued")
        await other.close()
        await db.close()
    }

    @Test(.timeLimit(.minutes(1))) func clientRestartedOfflineShowsCachedValuesThenSyncs() async throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let first = try daemon(data: data)
        let port = first.port
        let admin = first.admin
        let cache = URL(fileURLWithPath: makeTemporaryDirectory())
        let online = try clientDatabase(port: port, namespace: "off2", token: admin, cache: cache)
        try await online.ref("feed").setValue(["a": ["order": 1], "b": ["order": 2]]).synced()
        let feed = SnapshotRecorder(online.ref("feed").orderByChild("order").limitToLast(5))
        #expect(await eventually { feed.last == ["a": ["order": 1], "b": ["order": 2]] })
        online.goOffline()
        online.ref("feed/c").setValue(["order": 3])
        await online.close()
        first.terminate()

        // Started with the daemon down: the cached window and the queued write show at once.
        let restarted = try clientDatabase(port: port, namespace: "off2", token: admin, cache: cache)
        #expect(restarted.pendingWriteCount == 1)
        let again = SnapshotRecorder(restarted.ref("feed").orderByChild("order").limitToLast(5))
        #expect(await eventually { again.last == ["a": ["order": 1], "b": ["order": 2], "c": ["order": 3]] })
        #expect(again.all.first?.fromCache == true)
        #expect(again.all.last?.children.map(\.key) == ["a", "b", "c"])

        let second = try daemon(port: port, data: data)
        defer { second.terminate() }
        #expect(await eventually { restarted.pendingWriteCount == 0 })
        // Events fire only on changes, so the open stream stays quiet; a new listener sees confirmed data.
        #expect(await eventually { (try? await restarted.ref("feed").getValue().fromCache) == false })
        let other = try clientDatabase(port: port, namespace: "off2", token: admin)
        #expect(try await other.ref("feed").getValue().value == ["a": ["order": 1], "b": ["order": 2], "c": ["order": 3]])
        await other.close()
        await restarted.close()
    }

    @Test(.timeLimit(.minutes(1))) func manyQueuedWritesDrainInOrderExactlyOnce() async throws {
        let server = try InProcessServer()
        defer { server.stop() }
        let cache = URL(fileURLWithPath: makeTemporaryDirectory())
        let db = try clientDatabase(port: server.port, namespace: "off5", token: server.admin, cache: cache)
        let log = SnapshotRecorder(db.ref("log"))
        #expect(await eventually { log.last == .null })
        db.goOffline()
        for i in 0..<500 { db.ref("log").childByAutoId().setValue(.int(Int64(i))) }
        db.ref("last").setValue(499)
        #expect(db.pendingWriteCount == 501)
        db.goOnline()
        #expect(await eventually(timeout: 60) { db.pendingWriteCount == 0 })
        let other = try clientDatabase(port: server.port, namespace: "off5", token: server.admin)
        let stored = try await other.ref("log").getValue()
        // Push ids sort chronologically, so key order is write order.
        #expect(stored.children.map(\.value) == (0..<500).map { JSONValue.int(Int64($0)) })
        await other.close()
        await db.close()
    }

    /// The daemon is killed (SIGKILL) while the client streams writes: after a restart every write is there
    /// exactly once, and increments never count twice (an increment caught in flight is reported, not resent).
    @Test(.timeLimit(.minutes(2))) func writesStreamedThroughAKill9LandExactlyOnce() async throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let first = try daemon(data: data)
        let port = first.port
        let admin = first.admin
        let db = try clientDatabase(port: port, namespace: "off6", token: admin)
        var increments: [PendingWrite] = []
        for i in 0..<300 {
            db.ref("log").childByAutoId().setValue(.int(Int64(i)))
            increments.append(db.ref("count").setValue(ServerValue.increment(1)))
            if i == 150 { first.kill9() }
            if i % 10 == 0 { try await Task.sleep(nanoseconds: 2_000_000) }
        }
        let second = try daemon(port: port, data: data)
        defer { second.terminate() }
        #expect(await eventually(timeout: 60) { db.pendingWriteCount == 0 })
        var synced = 0
        var lost = 0
        for write in increments {
            switch await write.status {
            case .synced: synced += 1
            case .rejected: lost += 1
            case .pending: Issue.record("write \(write.id) still pending")
            }
        }
        let other = try clientDatabase(port: port, namespace: "off6", token: admin)
        let log = try await other.ref("log").getValue()
        #expect(log.children.map(\.value) == (0..<300).map { JSONValue.int(Int64($0)) })
        let count = try #require(try await other.ref("count").getValue().value.int64Value)
        #expect(count >= Int64(synced) && count <= Int64(synced + lost))
        await other.close()
        await db.close()
    }

    @Test(.timeLimit(.minutes(1))) func queuedWritesSurviveAnAppThatNeverClosed() async throws {
        let cache = URL(fileURLWithPath: makeTemporaryDirectory())
        // Nothing listens on port 9 (discard): the client stays offline.
        let first = try clientDatabase(port: 9, namespace: "off3", token: nil, cache: cache)
        first.ref("a").setValue(1)
        first.ref("b").setValue(2)
        // A second process opening the same file (the first one was "killed": never closed) sees both.
        let second = try clientDatabase(port: 9, namespace: "off3", token: nil, cache: cache)
        #expect(second.pendingWriteCount == 2)
        await second.close()
        await first.close()
    }

    @Test(.timeLimit(.minutes(1))) func tokenIsRefreshedBeforeItExpires() async throws {
        let rules = writeRules(#"{"rules": {"private": {".read": "auth != null"}}}"#)
        let server = try InProcessServer { $0.rulesFile = rules }
        defer { server.stop() }
        let credentials = server.daemon.credentials
        let refreshes = SnapshotCounter()
        let options = DatabaseOptions(
            reconnect: testOptions.reconnect,
            tokenRefresher: {
                refreshes.increment()
                return try? credentials.mint(claims: ["uid": "u1"], ttlSeconds: 3600, now: SystemClock().nowMilliseconds())
            })
        // Long enough that a loaded machine still connects, authenticates and refreshes (at half the remaining
        // time) before the server revokes the first token; short enough to pass its expiry within the test.
        // (8 s once proved too short with the whole suite running in parallel beside two CPU hogs.)
        let short = try credentials.mint(claims: ["uid": "u1"], ttlSeconds: 12, now: SystemClock().nowMilliseconds())
        let expiry = Date().addingTimeInterval(12)
        let db = try clientDatabase(port: server.port, namespace: "off4", token: short, options: options)
        let secret = SnapshotRecorder(db.ref("private"))
        #expect(await eventually { secret.last == .null })
        #expect(await eventually { refreshes.count >= 1 })
        // Past the first token's expiry the listen is still alive and authorised.
        #expect(await eventually(timeout: 20) { Date() > expiry.addingTimeInterval(1) })
        let admin = try clientDatabase(port: server.port, namespace: "off4", token: server.admin)
        try await admin.ref("private/x").setValue(1).synced()
        #expect(await eventually { secret.last == ["x": 1] })
        #expect(secret.error == nil)
        await admin.close()
        await db.close()
    }
}

/// A thread-safe counter.
final class SnapshotCounter: Sendable {
    private let value = Mutex<Int>(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
