// SyncEngineTests -- the sync engine against a scripted server: restore order, resend rules, hashes, events.

import CanopyCore
import Foundation
import Testing

@testable import CanopyClient

@Suite struct SyncEngineTests {
    @Test func restoreSendsAuthThenListensThenQueuedWritesInOrder() async throws {
        let network = ScriptedNetwork()
        let db = try scriptedDatabase(network, token: "tok")
        let seen = SnapshotLog(db.ref("x"))
        db.ref("x/a").setValue(1)
        db.ref("x").updateChildValues(["b/c": 2, "d": .null])
        db.ref("y").setValue("z")
        #expect(db.pendingWriteCount == 3)
        // Offline: the local write alone determines nothing about /x as a whole, but a set below shows up
        // once /x is known; here /x is unknown, so nothing is delivered yet.
        #expect(seen.values.isEmpty)
        network.accepting = true
        let connection = try #require(await network.connect(1))
        db.settle()
        // Settled is not always sent yet on a loaded machine: wait for the five requests, never index past them.
        #expect(await poll { connection.actions.count >= 5 })
        #expect(connection.actions == ["auth", "q", "p", "m", "p"])
        try #require(connection.requests.count >= 4)
        #expect(connection.requests[0]["b"]?["cred"] == "tok")
        #expect(connection.requests[1]["b"] == ["p": "/x", "h": ""])
        #expect(connection.requests[2]["b"] == ["p": "/x/a", "d": 1])
        #expect(connection.requests[3]["b"] == ["p": "/x", "d": ["b/c": 2, "d": nil]])
        connection.push("d", ["p": "/x", "d": ["a": 1, "b": ["c": 2]]])
        connection.replyTo("q")
        #expect(await poll { seen.values.last == ["a": 1, "b": ["c": 2]] })
        for r in [3, 4, 5] { connection.reply(Int64(r)) }
        #expect(await poll { db.pendingWriteCount == 0 })
        await db.close()
    }

    @Test func inFlightIncrementIsNeverResentButPlainWritesAre() async throws {
        let network = ScriptedNetwork(accepting: true)
        let db = try scriptedDatabase(network)
        let first = try #require(await network.connect(1))
        db.settle()
        let plain = db.ref("log/k").setValue("v")
        let increment = db.ref("count").setValue(ServerValue.increment(1))
        db.settle()
        #expect(first.actions == ["p", "p"])
        first.drop()
        let second = try #require(await network.connect(2))
        db.settle()
        // The plain put is idempotent and resent; the increment may have applied, so it is not.
        #expect(await poll { !second.actions.isEmpty })
        #expect(second.actions == ["p"])
        try #require(second.requests.count == 1)
        #expect(second.requests[0]["b"]?["p"] == "/log/k")
        await #expect(throws: ClientError.disconnected(path: "/count")) { try await increment.synced() }
        second.reply(second.requests[0]["r"]!.int64Value!)
        try await plain.synced()
        #expect(db.pendingWriteCount == 0)
        await db.close()
    }

    @Test func incrementQueuedWhileOfflineIsSentOnce() async throws {
        let network = ScriptedNetwork()
        let db = try scriptedDatabase(network)
        let increment = db.ref("count").setValue(ServerValue.increment(2))
        network.accepting = true
        let connection = try #require(await network.connect(1))
        db.settle()
        #expect(await poll { !connection.actions.isEmpty })
        #expect(connection.actions == ["p"])
        try #require(connection.requests.count == 1)
        #expect(connection.requests[0]["b"]?["d"] == [".sv": ["increment": 2]])
        connection.reply(1)
        try await increment.synced()
        await db.close()
    }

    @Test func relistenCarriesTheHashOfHeldData() async throws {
        let network = ScriptedNetwork(accepting: true)
        let db = try scriptedDatabase(network)
        let seen = SnapshotLog(db.ref("rooms"))
        let first = try #require(await network.connect(1))
        db.settle()
        first.push("d", ["p": "/rooms", "d": ["r1": ["name": "Lobby"]]])
        first.replyTo("q")
        #expect(await poll { seen.values.last == ["r1": ["name": "Lobby"]] })
        first.drop()
        let second = try #require(await network.connect(2))
        db.settle()
        let expected = try Node.from(json: ["r1": ["name": "Lobby"]]).hash
        #expect(second.request("q")?["b"]?["h"] == .string(expected))
        // The server skips the data (hashes match) and just confirms: no new event.
        second.replyTo("q")
        db.settle()
        #expect(seen.values.count == 1)
        #expect(seen.snapshots.last?.fromCache == false)
        await db.close()
    }

    @Test func rejectedWriteRollsBackAndEventsOnlyFireOnChange() async throws {
        let network = ScriptedNetwork(accepting: true)
        let db = try scriptedDatabase(network)
        let seen = SnapshotLog(db.ref("doc"))
        let connection = try #require(await network.connect(1))
        db.settle()
        connection.push("d", ["p": "/doc", "d": ["title": "A"]])
        connection.replyTo("q")
        #expect(await poll { seen.values == [["title": "A"]] })
        let write = db.ref("doc/title").setValue("B")
        #expect(await poll { seen.values == [["title": "A"], ["title": "B"]] })
        db.ref("doc/title").setValue("B")  // same visible value: no event
        db.settle()
        // Requests: q (1), the first p (2), the second p (3). Both are refused.
        connection.reply(3, "permission_denied", "Permission denied")
        connection.reply(2, "permission_denied", "Permission denied")
        await #expect(throws: ClientError.permissionDenied(path: "/doc/title")) { try await write.synced() }
        #expect(await poll { seen.values == [["title": "A"], ["title": "B"], ["title": "A"]] })
        #expect(db.pendingWriteCount == 0)
        await db.close()
    }

    @Test func taggedQueriesUseTheirOwnWindow() async throws {
        let network = ScriptedNetwork(accepting: true)
        let db = try scriptedDatabase(network)
        let top = SnapshotLog(db.ref("scores").orderByValue().limitToLast(2))
        let connection = try #require(await network.connect(1))
        db.settle()
        let listen = try #require(connection.request("q"))
        #expect(listen["b"]?["q"]?["l"] == 2 && listen["b"]?["q"]?["vf"] == "r" && listen["b"]?["q"]?["i"] == ".value")
        let tag = try #require(listen["b"]?["t"])
        connection.push("d", ["p": "/scores", "d": ["b": 5, "d": 9], "t": tag])
        connection.replyTo("q")
        #expect(await poll { top.values.last == ["b": 5, "d": 9] })
        #expect(top.snapshots.last?.children.map(\.key) == ["b", "d"])
        db.ref("scores/e").setValue(7)
        #expect(await poll { top.values.last == ["e": 7, "d": 9] })
        // An unusable push (an invalid key) is dropped whole instead of erasing anything.
        connection.push("d", ["p": "/scores", "d": ["bad.key": 1], "t": tag])
        db.ref("scores/f").setValue(8)
        #expect(await poll { top.values.last == ["f": 8, "d": 9] })
        #expect(!top.values.contains(.null))
        // An untagged push elsewhere does not touch the window.
        connection.push("d", ["p": "/scores/zz", "d": 100])
        db.settle()
        #expect(top.values.last == ["f": 8, "d": 9])
        await db.close()
    }

    @Test func priorityWritesApplyLocallyAndTravelAsPriorityPaths() async throws {
        let network = ScriptedNetwork(accepting: true)
        let db = try scriptedDatabase(network)
        let doc = SnapshotLog(db.ref("doc"))
        let connection = try #require(await network.connect(1))
        db.settle()
        connection.push("d", ["p": "/doc", "d": ["title": "A"]])
        connection.replyTo("q")
        #expect(await poll { doc.values.count == 1 })
        db.ref("doc/.priority").setValue(5)
        #expect(await poll { doc.snapshots.last?.priority == 5 })
        #expect(doc.snapshots.last?.exportValue == ["title": "A", ".priority": 5])
        db.settle()
        #expect(connection.request("p")?["b"] == ["p": "/doc/.priority", "d": 5])
        await db.close()
    }

    @Test func aQueryUnderALoadedLocationShowsItsWindowAtOnce() async throws {
        let network = ScriptedNetwork(accepting: true)
        let db = try scriptedDatabase(network)
        let all = SnapshotLog(db.ref("scores"))
        let connection = try #require(await network.connect(1))
        db.settle()
        connection.push("d", ["p": "/scores", "d": ["a": 1, "b": 5, "c": 3]])
        connection.replyTo("q")
        #expect(await poll { all.values.count == 1 })
        // The full data is held, so the new query's first value is its real window (never a spurious empty one).
        let top = SnapshotLog(db.ref("scores").orderByValue().limitToLast(1))
        #expect(await poll { top.values == [["b": 5]] })
        db.settle()
        let listen = try #require(connection.requests.last { $0["a"] == "q" && $0["b"]?["t"] != nil })
        #expect(listen["b"]?["h"] == .string(try Node.from(json: ["b": 5]).hash))
        await db.close()
    }

    @Test func transactionRerunsOnDatastaleWithFreshData() async throws {
        let network = ScriptedNetwork(accepting: true)
        let db = try scriptedDatabase(network)
        let connection = try #require(await network.connect(1))
        let task = Task {
            try await db.ref("counter").runTransaction { current in .success(.int((current.int64Value ?? 0) + 1)) }
        }
        #expect(await poll { connection.request("q", path: "/counter") != nil })
        connection.push("d", ["p": "/counter", "d": 5])
        connection.replyTo("q")
        #expect(await poll { connection.request("p") != nil })
        let first = try #require(connection.request("p"))
        #expect(first["b"]?["d"] == 6)
        #expect(first["b"]?["h"] == .string(try Node.from(json: 5).hash))
        connection.push("d", ["p": "/counter", "d": 10])
        connection.reply(first["r"]!.int64Value!, "datastale", "stale")
        #expect(await poll { connection.actions.count(where: { $0 == "p" }) == 2 })
        let second = try #require(connection.request("p"))
        #expect(second["b"]?["d"] == 11)
        connection.push("d", ["p": "/counter", "d": 11])
        connection.reply(second["r"]!.int64Value!)
        let result = try await task.value
        #expect(result.committed)
        #expect(result.snapshot.value == 11)
        await db.close()
    }

    @Test func offlineTransactionRunsOnHeldDataAndCommitsAfterReconnect() async throws {
        let network = ScriptedNetwork(accepting: true)
        let db = try scriptedDatabase(network)
        let counter = SnapshotLog(db.ref("counter"))
        let first = try #require(await network.connect(1))
        db.settle()
        first.push("d", ["p": "/counter", "d": 5])
        first.replyTo("q")
        #expect(await poll { counter.values == [5] })
        network.accepting = false
        first.drop()
        let task = Task {
            try await db.ref("counter").runTransaction { current in .success(.int((current.int64Value ?? 0) + 1)) }
        }
        // Offline, the result shows at once.
        #expect(await poll { counter.values == [5, 6] })
        network.accepting = true
        let second = try #require(await network.connect(network.connections.count + 1))
        #expect(await poll { second.actions.contains("p") })
        db.settle()
        let put = try #require(second.request("p"))
        #expect(put["b"]?["h"] == .string(try Node.from(json: 5).hash))
        #expect(second.actions.firstIndex(of: "q")! < second.actions.firstIndex(of: "p")!)
        second.replyTo("q")
        second.push("d", ["p": "/counter", "d": 6])
        second.reply(put["r"]!.int64Value!)
        let result = try await task.value
        #expect(result.committed && result.snapshot.value == 6)
        await db.close()
    }

    @Test func infoConnectedFollowsTheConnection() async throws {
        let network = ScriptedNetwork(accepting: true)
        let db = try scriptedDatabase(network)
        let connected = SnapshotLog(db.ref(".info/connected"))
        #expect(await poll { connected.values.first == false })
        let first = try #require(await network.connect(1))
        #expect(await poll { connected.values == [false, true] })
        first.drop()
        try #require(await poll { connected.values.count >= 3 })  // never index past what arrived
        #expect(connected.values[2] == false)
        _ = await network.connect(2)
        #expect(await poll { connected.values.last == true })
        await db.close()
    }
}
