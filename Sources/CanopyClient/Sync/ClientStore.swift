// ClientStore -- the client's one SQLite file: the persisted write queue and the cache of listened locations.
//
// Format (`PRAGMA user_version` is the schema version):
//   version 1 (first release)
//     writes(id INTEGER PRIMARY KEY, path TEXT, action TEXT, data TEXT)  -- FIFO by id; action `p` or `m`;
//                                                                        -- data = the value as sent (JSON)
//     cache(path TEXT PRIMARY KEY, data TEXT)                             -- server value of a default listen
//   version 2
//     writes gains `sent INTEGER` (1 once the write went out on some connection; see SyncCore+Writes)
//     query_cache(path, query, data, PRIMARY KEY(path, query))           -- server window of a query listen;
//                                                                        -- query = its wire object as JSON
// A fresh file is created at version 1 and migrated, so every migration runs on every new file.
// Confined to the SyncCore queue (SQLite multi-thread mode: one thread at a time per connection).

import CSQLite
import CanopyCore

/// One row of the write queue.
struct StoredWrite: Sendable, Equatable {
    var id: Int64
    var path: String
    var action: String
    var data: String
    var sent: Bool
}

/// One cached server value: a default listen (`query` empty) or a query window.
struct CachedValue: Sendable, Equatable {
    var path: String
    var query: String
    var data: String
}

final class ClientStore {
    static let currentVersion: Int64 = 2
    static let version1Schema = """
        CREATE TABLE writes(id INTEGER PRIMARY KEY, path TEXT NOT NULL, action TEXT NOT NULL, data TEXT NOT NULL);
        CREATE TABLE cache(path TEXT NOT NULL PRIMARY KEY, data TEXT NOT NULL);
        PRAGMA user_version = 1;
        """
    /// Migration n upgrades version n to n + 1.
    static let migrations: [Int64: String] = [
        1: """
        ALTER TABLE writes ADD COLUMN sent INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE query_cache(path TEXT NOT NULL, query TEXT NOT NULL, data TEXT NOT NULL,
            PRIMARY KEY(path, query));
        PRAGMA user_version = 2;
        """
    ]

    private var db: OpaquePointer?
    let path: String
    /// Whether the last failure was another connection holding the file's lock past the busy timeout.
    private(set) var lastFailureWasBusy = false

    /// Opens (creating and migrating as needed) the store at `path`.
    init(path: String) throws(ClientError) {
        self.path = path
        var handle: OpaquePointer?
        _ = csqlite_disable_memory_statistics()  // before SQLite initializes, as the daemon's store does
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard code == SQLITE_OK, let handle else {
            sqlite3_close_v2(handle)
            throw .storage(reason: "cannot open the cache file (SQLite code \(code))")
        }
        db = handle
        try execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 2000;")
        try migrate()
    }

    deinit { close() }

    func close() {
        if let db { sqlite3_close_v2(db) }
        db = nil
    }

    /// The schema version of the open file.
    func version() throws(ClientError) -> Int64 {
        var version: Int64 = 0
        try query("PRAGMA user_version", []) { version = sqlite3_column_int64($0, 0) }
        return version
    }

    private func migrate() throws(ClientError) {
        var current = try version()
        guard current <= Self.currentVersion else {
            throw .storage(reason: "the cache file has schema version \(current), newer than this client")
        }
        if current == 0 {
            try transaction { () throws(ClientError) in try execute(Self.version1Schema) }
            current = 1
        }
        while current < Self.currentVersion {
            guard let sql = Self.migrations[current] else { throw .storage(reason: "no migration from \(current)") }
            try transaction { () throws(ClientError) in try execute(sql) }
            current += 1
        }
    }

    // MARK: write queue

    func loadWrites() throws(ClientError) -> [StoredWrite] {
        var rows: [StoredWrite] = []
        try query("SELECT id, path, action, data, sent FROM writes ORDER BY id", []) { statement in
            rows.append(
                StoredWrite(
                    id: sqlite3_column_int64(statement, 0), path: Self.text(statement, 1), action: Self.text(statement, 2),
                    data: Self.text(statement, 3), sent: sqlite3_column_int64(statement, 4) != 0))
        }
        return rows
    }

    func appendWrite(_ write: StoredWrite) throws(ClientError) {
        try run(
            "INSERT INTO writes(id, path, action, data, sent) VALUES (?, ?, ?, ?, ?)",
            [.int(write.id), .string(write.path), .string(write.action), .string(write.data), .int(write.sent ? 1 : 0)])
    }

    func markSent(_ id: Int64) throws(ClientError) {
        try run("UPDATE writes SET sent = 1 WHERE id = ?", [.int(id)])
    }

    func removeWrite(_ id: Int64) throws(ClientError) {
        try run("DELETE FROM writes WHERE id = ?", [.int(id)])
    }

    // MARK: cache

    func loadCache() throws(ClientError) -> [CachedValue] {
        var rows: [CachedValue] = []
        try query("SELECT path, data FROM cache", []) { statement in
            rows.append(CachedValue(path: Self.text(statement, 0), query: "", data: Self.text(statement, 1)))
        }
        try query("SELECT path, query, data FROM query_cache", []) { statement in
            rows.append(
                CachedValue(path: Self.text(statement, 0), query: Self.text(statement, 1), data: Self.text(statement, 2)))
        }
        return rows
    }

    /// Replaces cached values in one transaction.
    func saveCache(_ values: [CachedValue]) throws(ClientError) {
        try transaction { () throws(ClientError) in
            for value in values {
                if value.query.isEmpty {
                    try run("INSERT OR REPLACE INTO cache(path, data) VALUES (?, ?)", [.string(value.path), .string(value.data)])
                } else {
                    try run(
                        "INSERT OR REPLACE INTO query_cache(path, query, data) VALUES (?, ?, ?)",
                        [.string(value.path), .string(value.query), .string(value.data)])
                }
            }
        }
    }

    // MARK: SQLite plumbing

    func execute(_ sql: String) throws(ClientError) {
        guard let db else { throw .closed }
        let code = sqlite3_exec(db, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw failure(code) }
    }

    private func transaction(_ body: () throws(ClientError) -> Void) throws(ClientError) {
        try execute("BEGIN IMMEDIATE")
        do {
            try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func run(_ sql: String, _ arguments: [JSONValue]) throws(ClientError) {
        try query(sql, arguments) { _ in }
    }

    private func query(_ sql: String, _ arguments: [JSONValue], row: (OpaquePointer) -> Void) throws(ClientError) {
        guard let db else { throw .closed }
        var statement: OpaquePointer?
        var code = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else { throw failure(code) }
        defer { sqlite3_finalize(statement) }
        for (i, argument) in arguments.enumerated() {
            let index = Int32(i + 1)
            switch argument {
            case .int(let n): code = sqlite3_bind_int64(statement, index, n)
            case .string(let s): code = sqlite3_bind_text(statement, index, s, -1, csqlite_transient())
            default: code = sqlite3_bind_null(statement, index)
            }
            guard code == SQLITE_OK else { throw failure(code) }
        }
        while true {
            code = sqlite3_step(statement)
            if code == SQLITE_ROW {
                row(statement)
            } else if code == SQLITE_DONE {
                return
            } else {
                throw failure(code)
            }
        }
    }

    private func failure(_ code: Int32) -> ClientError {
        lastFailureWasBusy = code & 0xFF == SQLITE_BUSY
        let message = db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "code \(code)"
        return .storage(reason: "SQLite: \(message)")
    }

    private static func text(_ statement: OpaquePointer, _ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, column) else { return "" }
        return String(cString: pointer)
    }
}
