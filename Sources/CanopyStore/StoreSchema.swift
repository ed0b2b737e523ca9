// StoreSchema -- the on-disk format of a namespace file, its SQL, and migrations between versions.
//
// FILE FORMAT (schema version 1)
//
// One SQLite database per namespace (`<data>/<namespace>.sqlite`), in WAL journal mode, with
// `PRAGMA application_id` = 0x436E7079 ("Cnpy") so tools can recognise a Canopy store. Two tables:
//
//   meta(name TEXT PRIMARY KEY, value NOT NULL)       WITHOUT ROWID
//     'schema_version' -> integer, the version of this format the file follows (1).
//     'revision'       -> integer, the revision of the last committed submission (0 when new).
//
//   nodes(key TEXT PRIMARY KEY COLLATE BINARY, kind INTEGER, value TEXT, priority TEXT)   WITHOUT ROWID
//     One row per leaf of the JSON tree, plus one row per internal node that has a priority.
//     key      the node's path: its keys joined with "/" (a key never contains "/"); the root is "".
//     kind     0 = leaf: `value` is the JSON text of the primitive (string, number, boolean) and
//                  `priority` the JSON text of its priority, or NULL.
//              1 = priority of an internal node: `value` is NULL, `priority` is set.
//     A CHECK constraint enforces exactly these two shapes.
//
// INVARIANTS (kept by the writer's callers, see StoreMutation)
//   - A leaf's key is never a proper prefix-path of another row's key (a leaf has no descendants).
//   - A kind-1 row exists only while some leaf lies below it.
//   Reading every row and inserting it into an empty tree rebuilds the tree exactly.
//
// SUBTREE RANGES
//   With BINARY collation keys compare as UTF-8 bytes. The rows of the subtree at path P (P != "")
//   are `key = P` plus the contiguous range `P + "/" <= key < P + "0"` ('0' is '/' + 1). The two parts
//   are deleted by two statements, each an index SEARCH on the primary key: a single
//   `P <= key < P + "0"` range would also scan siblings such as "P b" or "P-1". The root's subtree
//   is every row. Rows come back from `ORDER BY key` in byte order, which is not depth-first order
//   ("a b" sorts between "a" and "a/b"); loaders insert by path and do not rely on adjacency.
//
// MIGRATIONS
//   `StoreSchema.migrate` runs in one IMMEDIATE transaction when a file is opened: a file with no
//   tables is initialised at the current version; an older version is upgraded step by step; a newer
//   version is refused with `.unsupportedSchemaVersion` and left untouched; a database that has tables
//   but no `meta` row is refused with `.notAStore`.
import CSQLite

enum StoreSchema {
    /// The format version this build writes.
    static let currentVersion: Int64 = 1
    /// `PRAGMA application_id` of a Canopy store: "Cnpy".
    static let applicationID: Int64 = 0x436E_7079

    enum SQL {
        static let createMeta = "CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value NOT NULL) WITHOUT ROWID"
        static let createNodes = """
            CREATE TABLE nodes (
                key TEXT PRIMARY KEY NOT NULL COLLATE BINARY,
                kind INTEGER NOT NULL,
                value TEXT,
                priority TEXT,
                CHECK ((kind = 0 AND value IS NOT NULL)
                    OR (kind = 1 AND value IS NULL AND priority IS NOT NULL))
            ) WITHOUT ROWID
            """
        static let hasMeta = "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'"
        static let tableCount = "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"
        static let readMeta = "SELECT value FROM meta WHERE name = ?1"
        static let writeMeta =
            "INSERT INTO meta (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = ?2"
        static let readApplicationID = "PRAGMA application_id"
        static let writeApplicationID = "PRAGMA application_id = \(applicationID)"

        static let deleteAll = "DELETE FROM nodes"
        static let deleteKey = "DELETE FROM nodes WHERE key = ?1"
        static let deleteRange = "DELETE FROM nodes WHERE key >= ?1 AND key < ?2"
        static let upsertNode = """
            INSERT INTO nodes (key, kind, value, priority) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (key) DO UPDATE SET kind = ?2, value = ?3, priority = ?4
            """
        static let selectAll = "SELECT key, kind, value, priority FROM nodes ORDER BY key"
        // Reads of one subtree or one node's children (NamespaceStore+Peek).
        static let selectAllLimited = "SELECT key, kind, value, priority FROM nodes ORDER BY key LIMIT ?1"
        static let selectKey = "SELECT key, kind, value, priority FROM nodes WHERE key = ?1"
        static let selectRangeLimited =
            "SELECT key, kind, value, priority FROM nodes WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3"
        static let firstFromBelow =
            "SELECT key, kind, value FROM nodes WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT 1"
        static let firstFrom = "SELECT key, kind, value FROM nodes WHERE key >= ?1 ORDER BY key LIMIT 1"

        static let begin = "BEGIN IMMEDIATE"
        static let beginRead = "BEGIN DEFERRED"
        static let commit = "COMMIT"
        static let rollback = "ROLLBACK"
        static let savepoint = "SAVEPOINT submission"
        static let release = "RELEASE submission"
        static let rollbackToSavepoint = "ROLLBACK TO submission"
    }

    enum MetaName {
        static let schemaVersion = "schema_version"
        static let revision = "revision"
    }

    /// Turns a version `version - 1` file into a version `version` file.
    private static func upgrade(_ connection: SQLiteConnection, to version: Int64) throws(SQLiteError) {
        switch version {
        case 1:
            try connection.execute(SQL.createMeta)
            try connection.execute(SQL.createNodes)
            try connection.execute(SQL.writeApplicationID)
        default:
            preconditionFailure("no migration step to schema version \(version)")
        }
    }

    // MARK: Keys

    /// The row key of `path`: its keys joined with "/"; "" for the root.
    ///
    /// - Throws: `.invalidMutation` when a key is empty or contains "/" (it would alias another path).
    static func key(for path: [String]) throws(StoreError) -> String {
        var text: [UInt8] = []
        try key(for: path, into: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Replaces `key` with the row key of `path`, as UTF-8: checked and joined in one pass over the bytes (each
    /// mutation of every commit makes one or more keys, bound without making a `String`).
    ///
    /// - Throws: `.invalidMutation` when a key is empty or contains "/" (it would alias another path).
    static func key(for path: [String], into key: inout [UInt8]) throws(StoreError) {
        key.removeAll(keepingCapacity: true)
        var valid = true
        for (index, segment) in path.enumerated() {
            if index > 0 { key.append(UInt8(ascii: "/")) }
            var segment = segment
            segment.withUTF8 { bytes in
                if bytes.isEmpty || bytes.contains(UInt8(ascii: "/")) { valid = false }
                key.append(contentsOf: bytes)
            }
        }
        guard valid else {
            throw StoreError(
                .invalidMutation, "a key must be non-empty and free of '/'", location: LeafCodec.display(path))
        }
    }

    /// The path of a row key (inverse of `key(for:)`).
    ///
    /// Split on the UTF-8 bytes: "/" (0x2F) is never part of another character's encoding, and a load splits
    /// every row's key (splitting the `String` by `Character` was a fifth of a large namespace's load).
    static func path(for key: String) -> [String] {
        if key.isEmpty { return [] }
        var key = key
        return key.withUTF8 { bytes in
            var out: [String] = []
            var start = 0
            for index in bytes.indices where bytes[index] == UInt8(ascii: "/") {
                out.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
                start = index + 1
            }
            out.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start...]), as: UTF8.self))
            return out
        }
    }

    // MARK: Migration

    /// Brings the file to `currentVersion` and returns its committed revision.
    ///
    /// - Throws: `.unsupportedSchemaVersion` for a newer file, `.notAStore` for a foreign database,
    ///   `.sqlite` when SQLite fails. Nothing is changed when it throws.
    static func migrate(_ connection: SQLiteConnection) throws(StoreError) -> UInt64 {
        let file = connection.path
        do {
            try connection.execute(SQL.begin)
            let version = try storedVersion(connection)
            guard version <= currentVersion else {
                try connection.execute(SQL.rollback)
                throw StoreError(
                    .unsupportedSchemaVersion,
                    "the store has schema version \(version); this build reads versions up to \(currentVersion)",
                    location: file)
            }
            if version < currentVersion {
                for next in (version + 1)...currentVersion {
                    try upgrade(connection, to: next)
                }
                try writeMeta(connection, MetaName.schemaVersion, currentVersion)
                if version == 0 { try writeMeta(connection, MetaName.revision, 0) }
            }
            let revision = try readMeta(connection, MetaName.revision) ?? 0
            try connection.execute(SQL.commit)
            return UInt64(max(revision, 0))
        } catch let error as StoreError {
            if !connection.isAutocommit { try? connection.execute(SQL.rollback) }
            throw error
        } catch {
            if !connection.isAutocommit { try? connection.execute(SQL.rollback) }
            // Swift cannot yet prove the remaining errors are SQLiteError; they are (see the calls above).
            let sqliteError =
                error as? SQLiteError ?? SQLiteError(extendedResultCode: SQLITE_ERROR, message: "\(error)")
            throw StoreError(sqliteError, location: file)
        }
    }

    /// The committed revision as SQLite recovered it (0 for a file without a `meta` table), read without writing.
    static func recoveredRevision(_ connection: SQLiteConnection) throws(SQLiteError) -> UInt64 {
        guard try connection.queryText(SQL.hasMeta) == "1" else { return 0 }
        return UInt64(max(try readMeta(connection, MetaName.revision) ?? 0, 0))
    }

    /// 0 for an empty file, else the `meta` version.
    private static func storedVersion(_ connection: SQLiteConnection) throws -> Int64 {
        let hasMeta = try connection.queryText(SQL.hasMeta) == "1"
        if !hasMeta {
            let tables = try connection.queryText(SQL.tableCount)
            let applicationID = try connection.queryText(SQL.readApplicationID)
            guard tables == "0", applicationID == "0" else {
                throw StoreError(
                    .notAStore, "the file is an SQLite database but not a Canopy store", location: connection.path)
            }
            return 0
        }
        guard let version = try readMeta(connection, MetaName.schemaVersion) else {
            throw StoreError(.notAStore, "the store's meta table has no schema_version", location: connection.path)
        }
        return version
    }

    static func readMeta(_ connection: SQLiteConnection, _ name: String) throws(SQLiteError) -> Int64? {
        let statement = try connection.prepare(SQL.readMeta)
        try statement.bind(name, at: 1)
        guard try statement.step(), !statement.isNull(at: 0) else { return nil }
        return statement.int64(at: 0)
    }

    static func writeMeta(_ connection: SQLiteConnection, _ name: String, _ value: Int64) throws(SQLiteError) {
        let statement = try connection.prepare(SQL.writeMeta)
        try statement.bind(name, at: 1)
        try statement.bind(value, at: 2)
        try statement.run()
    }
}
