import CSQLite
// SQLiteError -- a failed SQLite call: result code, SQLite's message and the SQL text, never bound values.
import CanopyCore

/// A failed SQLite call.
///
/// Carries the extended result code, SQLite's own message and the SQL text that failed. Bound
/// arguments are deliberately left out (as GRDB does by default) so stored values never reach logs.
public struct SQLiteError: CanopyError, Equatable {
    /// The extended result code (`SQLITE_IOERR_FSYNC`, `SQLITE_CONSTRAINT_PRIMARYKEY`, ...).
    public let extendedResultCode: Int32
    /// SQLite's message for the failure (from `sqlite3_errmsg` or `sqlite3_errstr`).
    public let message: String
    /// The SQL text being prepared or run, when there was one.
    public let sql: String?

    /// Creates an error from a result code, a message and the SQL text.
    public init(extendedResultCode: Int32, message: String, sql: String? = nil) {
        self.extendedResultCode = extendedResultCode
        self.message = message
        self.sql = sql
    }

    /// The primary result code (`SQLITE_FULL`, `SQLITE_BUSY`, ...): the low byte of the extended code.
    public var resultCode: Int32 { extendedResultCode & 0xFF }

    /// Whether the disk or the database's size limit is exhausted (`SQLITE_FULL`).
    public var isFull: Bool { resultCode == SQLITE_FULL }

    public var code: String { resultCode == SQLITE_FULL ? "storage_full" : "storage_error" }

    public var userMessage: String {
        var text = "SQLite error \(extendedResultCode): \(message)"
        if let sql { text += " (while running: \(sql))" }
        return text
    }

    /// Builds an error from the connection's last error, or from `code` alone when there is no connection.
    static func last(_ database: OpaquePointer?, code: Int32, sql: String?) -> SQLiteError {
        if let database {
            let extended = sqlite3_extended_errcode(database)
            let message = String(cString: sqlite3_errmsg(database))
            // The connection's last error may be from another call when `code` came from somewhere
            // else (e.g. sqlite3_close); prefer the code we were given.
            return SQLiteError(
                extendedResultCode: (extended & 0xFF) == (code & 0xFF) ? extended : code, message: message, sql: sql)
        }
        return SQLiteError(extendedResultCode: code, message: String(cString: sqlite3_errstr(code)), sql: sql)
    }
}
