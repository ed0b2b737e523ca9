// StatementCache -- prepared statements keyed by SQL text, prepared once with SQLITE_PREPARE_PERSISTENT.

/// Statements prepared once and reused, keyed by their SQL text.
///
/// Belongs to one connection and one thread. Cached statements are prepared with
/// `SQLITE_PREPARE_PERSISTENT`, which tells SQLite they will be kept and reused.
public struct StatementCache {
    private let connection: SQLiteConnection
    private var statements: [String: Statement] = [:]

    /// Creates an empty cache over `connection`.
    public init(connection: SQLiteConnection) {
        self.connection = connection
    }

    /// The cached statement for `sql`, preparing it on first use. The statement is reset before it is returned.
    ///
    /// - Throws: `SQLiteError` when the SQL does not prepare.
    public mutating func statement(_ sql: String) throws(SQLiteError) -> Statement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        let statement = try connection.prepare(sql, persistent: true)
        statements[sql] = statement
        return statement
    }

    /// Finalizes every cached statement (required before the connection closes).
    public mutating func removeAll() { statements.removeAll() }
}
