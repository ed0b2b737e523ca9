// ClientStoreTests -- the cache/queue file: schema version, FIFO queue, cache rows, migration from version 1.

import CSQLite
import Foundation
import Testing

@testable import CanopyClient

@Suite struct ClientStoreTests {
    func file() -> String { temporaryDirectory().appendingPathComponent("store.sqlite").path }

    @Test func freshFileIsAtTheCurrentVersionAndKeepsTheQueueInOrder() throws {
        let path = file()
        let store = try ClientStore(path: path)
        #expect(try store.version() == ClientStore.currentVersion)
        for id in [3, 1, 2] as [Int64] {
            try store.appendWrite(StoredWrite(id: id, path: "/a/\(id)", action: "p", data: "\(id)", sent: false))
        }
        try store.markSent(2)
        try store.removeWrite(3)
        store.close()
        let reopened = try ClientStore(path: path)
        #expect(try reopened.loadWrites() == [
            StoredWrite(id: 1, path: "/a/1", action: "p", data: "1", sent: false),
            StoredWrite(id: 2, path: "/a/2", action: "p", data: "2", sent: true),
        ])
    }

    @Test func cacheRowsReplaceByLocationAndQuery() throws {
        let store = try ClientStore(path: file())
        try store.saveCache([
            CachedValue(path: "/a", query: "", data: "1"), CachedValue(path: "/a", query: #"{"l":1}"#, data: "2"),
        ])
        try store.saveCache([CachedValue(path: "/a", query: "", data: "3")])
        let rows = try store.loadCache().sorted { $0.query < $1.query }
        #expect(rows == [CachedValue(path: "/a", query: "", data: "3"), CachedValue(path: "/a", query: #"{"l":1}"#, data: "2")])
    }

    /// A file written by the first release (schema version 1) opens, migrates, and keeps its queue and cache.
    @Test func migratesAVersion1File() async throws {
        let path = file()
        var db: OpaquePointer?
        #expect(sqlite3_open(path, &db) == SQLITE_OK)
        let v1 = ClientStore.version1Schema + """
            INSERT INTO writes(id, path, action, data) VALUES (7, '/chat/m1', 'p', '{"text":"hi"}');
            INSERT INTO writes(id, path, action, data) VALUES (9, '/chat', 'm', '{"m2/text":"yo"}');
            INSERT INTO cache(path, data) VALUES ('/chat', '{"m0":{"text":"old"}}');
            """
        #expect(sqlite3_exec(db, v1, nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)

        let store = try ClientStore(path: path)
        #expect(try store.version() == 2)
        #expect(try store.loadWrites().map(\.id) == [7, 9])
        #expect(try store.loadWrites().allSatisfy { !$0.sent })
        #expect(try store.loadCache() == [CachedValue(path: "/chat", query: "", data: #"{"m0":{"text":"old"}}"#)])
        store.close()

        // And a Database started on it shows cache + queued writes at once, offline.
        let directory = temporaryDirectory()
        try FileManager.default.moveItem(
            atPath: path, toPath: directory.appendingPathComponent(Database.cacheFileName(namespace: "test")).path)
        let database = try scriptedDatabase(ScriptedNetwork(), cache: directory)
        #expect(database.pendingWriteCount == 2)
        let log = SnapshotLog(database.ref("chat"))
        #expect(await poll { log.values.last == ["m0": ["text": "old"], "m1": ["text": "hi"], "m2": ["text": "yo"]] })
        #expect(log.snapshots.last?.fromCache == true)
        await database.close()
    }

    @Test func refusesAFileFromANewerClient() throws {
        let path = file()
        var db: OpaquePointer?
        #expect(sqlite3_open(path, &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, "PRAGMA user_version = 99", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        #expect(throws: ClientError.self) { try ClientStore(path: path) }
    }
}
