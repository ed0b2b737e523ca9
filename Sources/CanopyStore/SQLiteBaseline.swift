// SQLiteBaseline -- raw SQLite key/value writes with Canopy's durability, the benchmark's yardstick.
import Synchronization

/// Direct SQLite writes with the same file settings as `NamespaceStore` (WAL, same `synchronous`).
///
/// `canopy bench write` runs its workload here and through Canopy, and reports the ratio. Calls are
/// serialised by a lock (one connection), so the class is safe to share between threads.
public final class SQLiteBaseline: Sendable {
    private static let createTable =
        "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID"
    private static let upsertSQL =
        "INSERT INTO kv (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2"

    /// The connection and its one statement; only touched under the lock.
    private struct Connection {
        let connection: SQLiteConnection
        let upsert: Statement
    }

    private let state: Mutex<Connection>

    /// Opens (creating if needed) a key/value table in the file at `path`.
    ///
    /// - Throws: `StoreError` when the file cannot be opened or configured.
    public init(path: String, options: StoreOptions = StoreOptions()) throws(StoreError) {
        do {
            let connection = try SQLiteConnection(path: path)
            try StoreWriter.configure(connection, options: options)
            try connection.execute(Self.createTable)
            let upsert = try connection.prepare(Self.upsertSQL, persistent: true)
            state = Mutex(Connection(connection: connection, upsert: upsert))
        } catch {
            throw StoreError(error, location: path)
        }
    }

    /// Writes one pair in its own transaction (one commit, one WAL fsync with `synchronous=FULL`).
    ///
    /// - Throws: `StoreError` when the write fails.
    public func upsert(key: String, value: String) throws(StoreError) {
        try upsert([(key, value)])
    }

    /// Writes several pairs in one transaction (the grouped variant).
    ///
    /// - Throws: `StoreError` when the write fails; nothing is written then.
    public func upsert(_ pairs: [(key: String, value: String)]) throws(StoreError) {
        let result: Result<Void, SQLiteError> = state.withLock { state in
            do throws(SQLiteError) {
                if pairs.count > 1 { try state.connection.execute(StoreSchema.SQL.begin) }
                for (key, value) in pairs {
                    try state.upsert.bind(key, at: 1)
                    try state.upsert.bind(value, at: 2)
                    try state.upsert.run()
                }
                if pairs.count > 1 { try state.connection.execute(StoreSchema.SQL.commit) }
                return .success(())
            } catch {
                if !state.connection.isAutocommit { try? state.connection.execute(StoreSchema.SQL.rollback) }
                return .failure(error)
            }
        }
        if case .failure(let error) = result { throw StoreError(error) }
    }
}
