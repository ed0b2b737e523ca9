// SQLiteConnection -- one SQLite database connection, used by one thread at a time.
import CSQLite

/// One connection to an SQLite database file.
///
/// The connection is opened in SQLite's multi-thread mode (`SQLITE_OPEN_NOMUTEX`): SQLite does no
/// locking of its own, so a connection and its statements must be used by one thread at a time.
/// "Multi-thread. In this mode, SQLite can be safely used by multiple threads provided that no single
/// database connection nor any object derived from database connection [...] is used in two or more
/// threads at the same time." (sqlite.org/threadsafe.html). Canopy keeps each connection confined to
/// one thread, so it is not `Sendable`.
public final class SQLiteConnection {
    /// How to open the file.
    public enum Mode: Sendable {
        /// Read and write; create the file if it is missing.
        case readWriteCreate
        /// Read only; the file must exist.
        case readOnly
    }

    /// The file this connection opened.
    public let path: String
    private var handle: OpaquePointer?

    /// Opens (and, in `.readWriteCreate` mode, creates) the database at `path`.
    ///
    /// - Throws: `SQLiteError` when the file cannot be opened.
    public init(path: String, mode: Mode = .readWriteCreate) throws(SQLiteError) {
        self.path = path
        SQLiteConnection.configureProcess()
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        switch mode {
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        }
        var opened: OpaquePointer?
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        guard code == SQLITE_OK, let opened else {
            let error = SQLiteError.last(opened, code: code, sql: nil)
            sqlite3_close_v2(opened)  // sqlite3_open_v2 allocates a handle even on failure
            throw error
        }
        handle = opened
        sqlite3_extended_result_codes(opened, 1)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Process-wide settings, made once before the first open initializes SQLite: no memory statistics (they take
    /// a global mutex around each of SQLite's allocations; 6 % of the writer's time while it writes a publish's
    /// rows). The figures they would give are not used; the daemon's memory is reported by the process.
    private static let processConfigured: Void = { _ = csqlite_disable_memory_statistics() }()
    static func configureProcess() { processConfigured }

    /// The open handle. Using a closed connection is a programmer error.
    var database: OpaquePointer {
        guard let handle else { preconditionFailure("SQLiteConnection used after close()") }
        return handle
    }

    /// Prepares one statement.
    ///
    /// - Parameters:
    ///   - sql: exactly one SQL statement.
    ///   - persistent: pass `true` for statements kept and reused (`SQLITE_PREPARE_PERSISTENT`).
    /// - Throws: `SQLiteError` when the SQL does not prepare.
    public func prepare(_ sql: String, persistent: Bool = false) throws(SQLiteError) -> Statement {
        var statement: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let code = sqlite3_prepare_v3(database, sql, -1, flags, &statement, nil)
        guard code == SQLITE_OK else { throw SQLiteError.last(database, code: code, sql: sql) }
        guard let statement else {
            // Only whitespace or comments: nothing to run. Callers never do this on purpose.
            throw SQLiteError(extendedResultCode: SQLITE_MISUSE, message: "empty statement", sql: sql)
        }
        return Statement(handle: statement, database: database, sql: sql)
    }

    /// Runs one or more SQL statements that take no parameters, ignoring any rows.
    ///
    /// - Throws: `SQLiteError` from the first statement that fails.
    public func execute(_ sql: String) throws(SQLiteError) {
        let code = sqlite3_exec(database, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw SQLiteError.last(database, code: code, sql: sql) }
    }

    /// Runs a single-row query (e.g. a pragma that reports its new value) and returns its first column as text.
    ///
    /// - Throws: `SQLiteError` when the statement fails.
    public func queryText(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.text(at: 0)
    }

    /// Whether no transaction is open. After some errors (`SQLITE_FULL`, `SQLITE_IOERR`, ...) SQLite rolls the
    /// whole transaction back by itself; this is how a caller finds out.
    public var isAutocommit: Bool { sqlite3_get_autocommit(database) != 0 }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes64(database)) }

    /// Closes the connection. Every `Statement` made from it must have been released first.
    ///
    /// - Throws: `SQLiteError` (`SQLITE_BUSY`) when statements are still alive; the connection stays open.
    public func close() throws(SQLiteError) {
        guard let handle else { return }
        let code = sqlite3_close(handle)
        guard code == SQLITE_OK else { throw SQLiteError.last(handle, code: code, sql: nil) }
        self.handle = nil
    }
}
