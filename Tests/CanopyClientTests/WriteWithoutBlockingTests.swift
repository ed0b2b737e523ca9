// WriteWithoutBlockingTests -- write calls return while the cache file is locked; the wire waits for the file.

import CSQLite
import CanopyCore
import Foundation
import Testing

@testable import CanopyClient

/// SQLite's write lock on a file, held by a second connection (`BEGIN IMMEDIATE`) until `release()`.
final class SQLiteWriteLock {
    private var db: OpaquePointer?

    init(_ path: String) throws {
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK,
            sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK
        else { throw ClientError.storage(reason: "cannot lock \(path)") }
    }

    func release() {
        sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
        sqlite3_close_v2(db)
        db = nil
    }

    deinit { release() }
}

@Suite struct WriteWithoutBlockingTests {
    /// Before the store writer, `setValue` inserted the row on the caller's thread and, with the file locked,
    /// waited out SQLite's busy timeout (2 s) there — and sent the write whether or not the row was saved.
    @Test(.timeLimit(.minutes(1))) func writeCallsReturnWhileTheFileIsLockedAndTheWireWaitsForTheRow()
        async throws
    {
        let network = ScriptedNetwork(accepting: true)
        let cache = temporaryDirectory()
        let db = try scriptedDatabase(network, cache: cache)
        let connection = try #require(await network.connect(1))
        db.settle()
        let file = cache.appendingPathComponent(Database.cacheFileName(namespace: "test")).path

        let lock = try SQLiteWriteLock(file)
        let started = monotonicNanoseconds()
        let set = db.ref("a").setValue(1)
        let update = db.ref("b").updateChildValues(["c": 2])
        let remove = db.ref("d").removeValue()
        let elapsed = Double(monotonicNanoseconds() - started) / 1e9
        #expect(elapsed < 1, "three write calls took \(elapsed) s with the file locked")
        #expect(db.pendingWriteCount == 3)
        #expect(try await db.ref("b/c").getValue(timeout: 5).value == 2)  // applied locally at once
        db.settle()
        #expect(!connection.actions.contains("p") && !connection.actions.contains("m"))

        lock.release()
        await remove.saved()
        // In call order: the three writes, then the listen (and unlisten) of `getValue`, held behind them.
        #expect(await poll { connection.actions == ["p", "m", "p", "q", "n"] })
        #expect(await set.status == .pending && update.id < remove.id)
        await db.close()

        // Every row reached the file, in call order, and survives a restart.
        let store = try ClientStore(path: file)
        #expect(try store.loadWrites().map(\.path) == ["/a", "/b", "/d"])
        store.close()
        let restarted = try scriptedDatabase(ScriptedNetwork(), cache: cache)
        #expect(restarted.pendingWriteCount == 3)
        await restarted.close()
    }

    @Test func savedReturnsAtOnceWithoutACacheFile() async throws {
        let db = try scriptedDatabase(ScriptedNetwork())
        await db.ref("a").setValue(1).saved()
        #expect(db.pendingWriteCount == 1)
        await db.close()
    }
}
