// NamespaceStore+Peek -- reading one subtree, or one node's children, straight from the file.
//
// A namespace's tree is loaded whole before the namespace serves anything (Architecture.md#Loading-a-namespace).
// A read that names a small part of a large namespace need not wait for that: these reads answer it from the
// file while the load runs. Each uses its own read-only connection and one read transaction, like `loadAll`, and
// stops past a row limit (the caller then waits for the load instead). The store has been opened (recovered,
// checked for lost commits, migrated) before either is called, so what they see is what the load will see.
import CanopyCore

extension NamespaceStore {
    /// The rows of the subtree at `path`, in key order; nil when there are more than `maxRows`.
    ///
    /// - Throws: `StoreError` when SQLite fails or a row is damaged.
    public func peekSubtree(at path: [String], maxRows: Int) throws(StoreError) -> [StoredEntry]? {
        let key = try StoreSchema.key(for: path)
        return try withReadTransaction { connection throws(StoreError) in
            var rows: [StoredEntry] = []
            if path.isEmpty {
                guard try scan(connection, StoreSchema.SQL.selectAllLimited, [], remaining: maxRows, into: &rows)
                else { return nil }
                return rows
            }
            guard try scan(connection, StoreSchema.SQL.selectKey, [key], into: &rows),
                try scan(
                    connection, StoreSchema.SQL.selectRangeLimited, [key + "/", key + "0"],
                    remaining: maxRows - rows.count, into: &rows)
            else { return nil }
            return rows
        }
    }

    /// One child of a node, as a shallow read shows it.
    public enum PeekedChild: Sendable, Equatable {
        /// A leaf child and its value.
        case leaf(JSONValue)
        /// A child with children of its own.
        case object
    }

    /// What is stored at `path`, for a shallow read: its own leaf value if it is a leaf, else its children's keys
    /// (a leaf child with its value); nil when it has more than `maxChildren` children. One index search per child,
    /// however large each child's subtree is.
    ///
    /// - Throws: `StoreError` when SQLite fails or a row is damaged.
    public func peekChildren(at path: [String], maxChildren: Int) throws(StoreError) -> (
        leaf: JSONValue?, children: [(key: String, child: PeekedChild)]
    )? {
        let key = try StoreSchema.key(for: path)
        return try withReadTransaction { connection throws(StoreError) in
            var own: [StoredEntry] = []
            _ = try scan(connection, StoreSchema.SQL.selectKey, [key], into: &own)
            if let row = own.first, row.kind == .leaf { return (row.value, []) }
            let prefix = path.isEmpty ? "" : key + "/"
            let end = path.isEmpty ? nil : key + "0"
            var children: [(key: String, child: PeekedChild)] = []
            // The first row after `cursor` (or at it): the next child, whose subtree is then skipped whole.
            var cursor = prefix
            var inclusive = !path.isEmpty
            while true {
                guard let next = try firstKey(connection, from: cursor, inclusive: inclusive, below: end) else { break }
                let rest = next.key.utf8.dropFirst(prefix.utf8.count)
                let slash = rest.firstIndex(of: UInt8(ascii: "/"))
                let name = String(decoding: rest[..<(slash ?? rest.endIndex)], as: UTF8.self)
                if slash == nil, next.kind == 0 {
                    guard let text = next.value else {
                        throw StoreError(.corrupt, "a leaf row has no value", location: "/" + next.key)
                    }
                    children.append((name, .leaf(try LeafCodec.decode(text, key: next.key))))
                    cursor = next.key
                    inclusive = false
                } else {
                    // A priority row or a deeper row: an object child. Its subtree is `name/…`, below `name0`.
                    if children.last?.key != name { children.append((name, .object)) }
                    if slash == nil {
                        cursor = next.key
                        inclusive = false
                    } else {
                        cursor = prefix + name + "0"
                        inclusive = true
                    }
                }
                if children.count > maxChildren { return nil }
            }
            return (nil, children)
        }
    }

    /// Runs `body` in a read transaction of a new read-only connection (`openReadTransaction`).
    private func withReadTransaction<T>(_ body: (SQLiteConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        let connection = try openReadTransaction()
        defer { try? connection.execute(StoreSchema.SQL.commit) }
        return try body(connection)
    }

    /// Appends the rows `sql` selects to `rows`: `keys` are bound to ?1, ?2…, and `remaining`, when given, as
    /// the LIMIT after them (one more than may be taken). False when more than `remaining` rows were there.
    private func scan(
        _ connection: SQLiteConnection, _ sql: String, _ keys: [String], remaining: Int? = nil,
        into rows: inout [StoredEntry]
    ) throws(StoreError) -> Bool {
        let statement = try sqlite { () throws(SQLiteError) in try connection.prepare(sql) }
        defer { statement.reset() }
        try sqlite { () throws(SQLiteError) in
            for (index, key) in keys.enumerated() { try statement.bind(key, at: Int32(index + 1)) }
            if let remaining { try statement.bind(Int64(remaining + 1), at: Int32(keys.count + 1)) }
        }
        var count = 0
        while try sqlite({ () throws(SQLiteError) in try statement.step() }) {
            count += 1
            if let remaining, count > remaining { return false }
            rows.append(try Self.entry(from: statement))
        }
        return true
    }

    /// Runs SQLite calls, naming this store's file in their error.
    private func sqlite<T>(_ body: () throws(SQLiteError) -> T) throws(StoreError) -> T {
        do { return try body() } catch { throw StoreError(error, location: path) }
    }

    /// The first row key after `cursor` (at it too when `inclusive`) and below `end` (if any), with its kind and
    /// value text.
    private func firstKey(_ connection: SQLiteConnection, from cursor: String, inclusive: Bool, below end: String?)
        throws(StoreError) -> (key: String, kind: Int64, value: String?)?
    {
        // "After k" is "at or after k + U+0001": no key holds U+0000 (keys exclude control characters), so nothing
        // sorts between the two.
        let from = inclusive ? cursor : cursor + "\u{1}"
        let sql = end == nil ? StoreSchema.SQL.firstFrom : StoreSchema.SQL.firstFromBelow
        return try sqlite { () throws(SQLiteError) in
            let statement = try connection.prepare(sql)
            defer { statement.reset() }
            try statement.bind(from, at: 1)
            if let end { try statement.bind(end, at: 2) }
            guard try statement.step() else { return nil }
            return (statement.text(at: 0) ?? "", statement.int64(at: 1), statement.text(at: 2))
        }
    }
}
