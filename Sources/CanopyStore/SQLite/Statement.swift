// Statement -- one prepared SQLite statement: bind, step, read columns, reset.
import CSQLite

/// A prepared statement, used on the thread that owns its connection.
///
/// Bind parameters are 1-based, columns 0-based, as in SQLite's C API. A statement is finalized when
/// it is released; it must not outlive its `SQLiteConnection`.
///
/// ```swift
/// let select = try connection.prepare("SELECT value FROM meta WHERE key = ?1")
/// try select.bind("schema_version", at: 1)
/// if try select.step() { print(select.int64(at: 0)) }
/// select.reset()
/// ```
public final class Statement {
    /// The SQL text this statement was prepared from (used in error reports).
    public let sql: String
    let handle: OpaquePointer
    private let database: OpaquePointer

    init(handle: OpaquePointer, database: OpaquePointer, sql: String) {
        self.handle = handle
        self.database = database
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    // MARK: Binding

    /// Binds a 64-bit integer to the 1-based parameter `index`.
    public func bind(_ value: Int64, at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_int64(handle, index, value))
    }

    /// Binds a double to the 1-based parameter `index`.
    public func bind(_ value: Double, at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_double(handle, index, value))
    }

    /// Binds UTF-8 text given as bytes (copied by SQLite) to the 1-based parameter `index`. The caller vouches that
    /// `bytes` is valid UTF-8 (a row's key or JSON text made from Swift strings): no `String` is made for it.
    public func bind(utf8 bytes: [UInt8], at index: Int32) throws(SQLiteError) {
        try check(bytes.withUnsafeBufferPointer { bindText($0, at: index) })
    }

    /// Binds UTF-8 text (copied by SQLite) to the 1-based parameter `index`; `nil` binds NULL.
    public func bind(_ value: String?, at index: Int32) throws(SQLiteError) {
        guard var value else {
            try check(sqlite3_bind_null(handle, index))
            return
        }
        try check(value.withUTF8 { bindText($0, at: index) })
    }

    /// `sqlite3_bind_text` of `bytes`, copied; its result code.
    private func bindText(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int32) -> Int32 {
        bytes.withMemoryRebound(to: CChar.self) { chars in
            // A zero-length buffer may have a nil base address, which SQLite would bind as NULL.
            guard let base = chars.baseAddress else {
                return sqlite3_bind_text(handle, index, "", 0, csqlite_transient())
            }
            return sqlite3_bind_text(handle, index, base, Int32(chars.count), csqlite_transient())
        }
    }

    /// Sets every parameter back to NULL.
    public func clearBindings() { sqlite3_clear_bindings(handle) }

    // MARK: Stepping

    /// Runs the statement one step.
    ///
    /// - Returns: `true` when a row is available to read, `false` when the statement is done.
    /// - Throws: `SQLiteError` for any other result.
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteError.last(database, code: code, sql: sql)
        }
    }

    /// Steps until the statement is done, ignoring rows, then resets it.
    public func run() throws(SQLiteError) {
        defer { reset() }
        while try step() {}
    }

    /// Makes the statement ready to run again; bindings are kept.
    ///
    /// The result of `sqlite3_reset` repeats the last step's error, which `step()` already threw.
    public func reset() { sqlite3_reset(handle) }

    // MARK: Columns

    /// Whether column `index` of the current row is NULL.
    public func isNull(at index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }

    /// Column `index` of the current row as a 64-bit integer.
    public func int64(at index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    /// Column `index` of the current row as a double.
    public func double(at index: Int32) -> Double { sqlite3_column_double(handle, index) }

    /// Column `index` of the current row as UTF-8 text, or `nil` when it is NULL.
    public func text(at index: Int32) -> String? {
        guard let bytes = sqlite3_column_text(handle, index) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    private func check(_ code: Int32) throws(SQLiteError) {
        guard code == SQLITE_OK else { throw SQLiteError.last(database, code: code, sql: sql) }
    }
}
