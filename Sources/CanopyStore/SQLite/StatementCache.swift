// StatementCache -- prepared statements keyed by SQL text, prepared once with SQLITE_PREPARE_PERSISTENT.

/// Statements prepared once and reused, keyed by their SQL text.
///
/// Belongs to one connection and one thread. Cached statements are prepared with
/// `SQLITE_PREPARE_PERSISTENT`, which tells SQLite they will be kept and reused.
public struct StatementCache {
    private let connection: SQLiteConnection
    /// A handful of statements, each looked up several times per commit: a linear scan, whose string comparison
    /// of the same constant is a pointer check, beats hashing the SQL text every time.
    private var statements: [(sql: String, statement: Statement)] = []

    /// Creates an empty cache over `connection`.
    public init(connection: SQLiteConnection) {
        self.connection = connection
    }

    /// The cached statement for `sql`, preparing it on first use. The statement is reset before it is returned.
    ///
    /// - Throws: `SQLiteError` when the SQL does not prepare.
    public mutating func statement(_ sql: String) throws(SQLiteError) -> Statement {
        for entry in statements where entry.sql.utf8.count == sql.utf8.count && entry.sql == sql {
            entry.statement.reset()
            return entry.statement
        }
        let statement = try connection.prepare(sql, persistent: true)
        statements.append((sql, statement))
        return statement
    }

    /// Finalizes every cached statement (required before the connection closes).
    public mutating func removeAll() { statements.removeAll() }
}
