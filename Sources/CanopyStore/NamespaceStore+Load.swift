// NamespaceStore+Load -- streaming every stored row back at start-up.
import CanopyCore

extension NamespaceStore {
    /// Reads every stored row, in key order, from one consistent snapshot.
    ///
    /// Uses its own read-only connection, so it may run while writes are being committed (it sees the state
    /// as of its start). Key order is UTF-8 byte order of the joined path, which is not depth-first order
    /// ("a b" sorts between "a" and "a/b"): insert entries by path.
    /// - Parameter body: called once per row; throwing stops the scan and rethrows.
    /// - Throws: `StoreError` (`.sqlite`, `.corrupt`) or whatever `body` throws.
    public func loadAll(_ body: (StoredEntry) throws -> Void) throws {
        let connection = try openReadTransaction()
        let select: Statement
        do {
            select = try connection.prepare(StoreSchema.SQL.selectAll)
        } catch {
            try? connection.execute(StoreSchema.SQL.commit)
            throw StoreError(error, location: path)
        }
        defer {
            select.reset()
            try? connection.execute(StoreSchema.SQL.commit)
        }
        while true {
            let hasRow: Bool
            do { hasRow = try select.step() } catch { throw StoreError(error, location: path) }
            guard hasRow else { break }
            try body(Self.entry(from: select))
        }
    }

    /// A new read-only connection to the file, in a read transaction (one consistent snapshot); commit it when done.
    func openReadTransaction() throws(StoreError) -> SQLiteConnection {
        do {
            let connection = try SQLiteConnection(path: path, mode: .readOnly)
            try connection.execute(StoreSchema.SQL.beginRead)
            return connection
        } catch {
            throw StoreError(error, location: path)
        }
    }

    /// Decodes the current row of `SQL.selectAll`.
    static func entry(from row: Statement) throws(StoreError) -> StoredEntry {
        let key = row.text(at: 0) ?? ""
        let path = StoreSchema.path(for: key)
        let priority = try row.text(at: 3).map { (text) throws(StoreError) in try LeafCodec.decode(text, key: key) }
        switch StoredEntry.Kind(rawValue: row.int64(at: 1)) {
        case .leaf:
            guard let text = row.text(at: 2) else {
                throw StoreError(.corrupt, "a leaf row has no value", location: "/" + key)
            }
            return StoredEntry(path: path, kind: .leaf, value: try LeafCodec.decode(text, key: key), priority: priority)
        case .priority:
            guard priority != nil else {
                throw StoreError(.corrupt, "a priority row has no priority", location: "/" + key)
            }
            return StoredEntry(path: path, kind: .priority, value: .null, priority: priority)
        case nil:
            throw StoreError(.corrupt, "unknown row kind", location: "/" + key)
        }
    }
}
