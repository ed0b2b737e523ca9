import CSQLite
// StoreWriter -- the writer thread's side of a namespace store: one connection, one transaction per group.
import CanopyCore
import Dispatch

/// Applies groups of submissions to one namespace file, one transaction per group.
///
/// Confined to the store's writer thread (it owns a non-Sendable connection and statement cache).
/// Each submission runs inside its own SAVEPOINT, so a submission that is refused (a bad mutation)
/// fails alone and leaves no trace, while the rest of its group commits. A failure that ends the
/// whole transaction (COMMIT fails, or SQLite rolls back by itself after `SQLITE_FULL`/`SQLITE_IOERR`)
/// fails every submission of the group; nothing of the group is on disk.
final class StoreWriter {
    /// What one submission writes: its mutations, then the rows of its source.
    struct Work: Sendable {
        var mutations: [StoreMutation]
        var rows: (any StoreRowSource)? = nil
    }

    let connection: SQLiteConnection
    private var cache: StatementCache
    /// The revision of the last committed submission.
    private(set) var revision: UInt64
    /// Whether the WAL must be synced after each commit (`synchronous = .full`). SQLite itself runs with
    /// `synchronous=NORMAL`, so COMMIT returns once the transaction is written to the WAL; `syncWAL()` then
    /// makes it survive power loss — the same guarantee as SQLite's FULL, in two steps the store can tell apart.
    let syncsAfterCommit: Bool

    /// Opens `path` for writing: configures WAL and durability, then migrates the schema.
    ///
    /// - Throws: `StoreError` when the file cannot be opened, configured or migrated.
    /// - Throws: `StoreError` when the file cannot be opened, configured or migrated; `.dataLoss` when committed
    ///   submissions are missing from it (see `CommitSequenceFile`) and `options.acceptsDataLoss` is false.
    init(path: String, options: StoreOptions) throws(StoreError) {
        let recovered: UInt64
        do {
            connection = try SQLiteConnection(path: path, mode: .readWriteCreate)
            try Self.configure(connection, options: options, syncsWALItself: true)
            // Before migrating: an empty file (its WAL gone before any checkpoint) would be initialised.
            recovered = try StoreSchema.recoveredRevision(connection)
        } catch {
            throw StoreError(error, location: path)
        }
        let sequencePath = CommitSequenceFile.path(for: path)
        let record = CommitSequenceFile.read(at: sequencePath)
        let loss = Self.loss(record: record, recovered: recovered, path: path)
        if let loss, !options.acceptsDataLoss {
            // Leave the files as they are for whoever investigates: no checkpoint, no WAL reset at close.
            csqlite_no_checkpoint_on_close(connection.database)
            try? connection.close()
            throw loss
        }
        revision = try StoreSchema.migrate(connection)
        cache = StatementCache(connection: connection)
        syncsAfterCommit = options.synchronous == .full
        checkpointFrames = options.walAutocheckpoint
        if checkpointFrames > 0 {
            // Replaces SQLite's own automatic checkpoint, which runs inside COMMIT (see `checkpointIfDue`).
            sqlite3_wal_hook(
                connection.database,
                { context, _, _, frames in
                    if let context { Unmanaged<WALFrames>.fromOpaque(context).takeUnretainedValue().count = frames }
                    return SQLITE_OK
                }, Unmanaged.passUnretained(walFrames).toOpaque())
        }
        sequence = try CommitSequenceFile(path: sequencePath)
        if record != .revision(revision) { try sequence.record(revision) }
        if let loss {
            sequence.sync()
            Logger(label: "canopy.store").warning(
                "store.data_loss_accepted",
                [
                    "file": path, "expected": loss.missing.map { "\($0.expected)" } ?? "unreadable",
                    "found": "\(recovered)",
                ])
        }
    }

    /// The side file recording the last committed revision outside the WAL.
    let sequence: CommitSequenceFile

    /// Frames in the WAL after the last commit, as SQLite's WAL hook reports them. Writer thread only.
    private final class WALFrames {
        var count: Int32 = 0
    }
    private let walFrames = WALFrames()
    /// WAL frames past which `checkpointIfDue` checkpoints (`StoreOptions.walAutocheckpoint`; 0: never).
    private let checkpointFrames: Int

    /// Whether `checkpointIfDue` would checkpoint now.
    var isCheckpointDue: Bool { checkpointFrames > 0 && walFrames.count >= checkpointFrames }

    /// Checkpoints the WAL (PASSIVE: copies what no reader needs into the database) once it holds
    /// `walAutocheckpoint` frames, as SQLite's automatic checkpoint would, but when the caller chooses: after a
    /// group was made visible and handed to the sync thread, not inside its COMMIT. A publish dirties a page
    /// per attendee; copying those back inside COMMIT delayed its delivery and acknowledgement by as much again.
    func checkpointIfDue() {
        guard isCheckpointDue else { return }
        walFrames.count = 0
        // Not an error when it cannot finish (a reader holds old frames): the next one goes on from there.
        _ = sqlite3_wal_checkpoint_v2(connection.database, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    }

    /// The loss `record` reveals when SQLite recovered `recovered`, if any.
    private static func loss(record: CommitSequenceFile.Record, recovered: UInt64, path: String) -> StoreError? {
        switch record {
        case .absent:
            return nil
        case .revision(let expected) where recovered < expected:
            return StoreError(
                .dataLoss,
                "committed writes are missing: revision \(expected) was committed but only revision \(recovered)"
                    + " could be recovered (the last \(expected - recovered) commits are lost: the write-ahead log"
                    + " was deleted, truncated or damaged)",
                location: path, missing: MissingCommits(expected: expected, found: recovered))
        case .revision:
            return nil
        case .unreadable:
            return StoreError(
                .dataLoss,
                "the record of the last committed revision (\(CommitSequenceFile.path(for: path))) is damaged, so"
                    + " whether committed writes are missing cannot be told (revision \(recovered) was recovered)",
                location: path)
        }
    }

    /// Forces the WAL to disk (fdatasync through SQLite's own file handle), after a COMMIT.
    func syncWAL() throws(StoreError) {
        var file: UnsafeMutablePointer<sqlite3_file>?
        let code = sqlite3_file_control(connection.database, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file)
        guard code == SQLITE_OK, let file, let methods = file.pointee.pMethods, let sync = methods.pointee.xSync
        else {
            throw StoreError(
                SQLiteError(extendedResultCode: code == SQLITE_OK ? SQLITE_ERROR : code, message: "no WAL file handle"),
                location: connection.path)
        }
        let synced = sync(file, SQLITE_SYNC_NORMAL)
        guard synced == SQLITE_OK else {
            throw StoreError(
                SQLiteError(extendedResultCode: synced, message: "syncing the WAL failed"), location: connection.path)
        }
    }

    /// Applies the pragmas every Canopy writer uses (shared with `SQLiteBaseline` so benchmarks compare alike).
    /// - Parameter syncsWALItself: the caller syncs the WAL after each commit (`syncWAL()`), so SQLite runs with
    ///   `synchronous=NORMAL` whatever `options` ask; otherwise SQLite applies `options.synchronous` itself.
    static func configure(_ connection: SQLiteConnection, options: StoreOptions, syncsWALItself: Bool = false)
        throws(SQLiteError)
    {
        sqlite3_busy_timeout(connection.database, 5_000)
        let mode = try connection.queryText("PRAGMA journal_mode = WAL")
        guard mode?.lowercased() == "wal" else {
            throw SQLiteError(
                extendedResultCode: SQLITE_ERROR, message: "cannot switch to WAL mode", sql: "PRAGMA journal_mode = WAL"
            )
        }
        // A store carries FULL out itself (see `syncsAfterCommit`); SQLite then syncs only at checkpoints.
        let synchronous = syncsWALItself ? StoreOptions.Synchronous.normal : options.synchronous
        try connection.execute("PRAGMA synchronous = \(synchronous.rawValue)")
        _ = try connection.queryText("PRAGMA wal_autocheckpoint = \(options.walAutocheckpoint)")
        try connection.execute("PRAGMA cache_size = -\(options.cacheSizeKiB)")
        // After a large transaction, truncate the WAL back to this size at the next checkpoint.
        _ = try connection.queryText("PRAGMA journal_size_limit = \(64 << 20)")
        if let pages = options.maximumPageCount {
            _ = try connection.queryText("PRAGMA max_page_count = \(pages)")
        }
    }

    /// Applies `group` in one transaction and commits it.
    ///
    /// - Parameters:
    ///   - group: the submissions, in submission order (each one's mutations, then the rows of its source).
    ///   - beforeCommit: test hook run just before COMMIT.
    /// - Returns: one result per submission: its revision, or why it failed.
    func commit(_ group: [Work], beforeCommit: (@Sendable () -> Void)? = nil) -> [Result<UInt64, StoreError>] {
        // Submissions almost never fail, so the group is first applied without a savepoint around each one (two
        // statements fewer per write). If one does fail, that transaction is rolled back and the group applied
        // again with savepoints, so only the failing submissions fail.
        if group.count > 1, let results = commitWithoutSavepoints(group, beforeCommit: beforeCommit) {
            return results
        }
        return commit(group, usesSavepoints: group.count > 1, beforeCommit: beforeCommit)
    }

    /// The whole group in one transaction without savepoints; nil (and nothing changed) if a submission failed.
    private func commitWithoutSavepoints(_ group: [Work], beforeCommit: (@Sendable () -> Void)?)
        -> [Result<UInt64, StoreError>]?
    {
        do {
            try run(StoreSchema.SQL.begin)
        } catch {
            return failAll(group, StoreError(error, location: connection.path))
        }
        for work in group {
            if case .failure = applyAll(work) {
                if !connection.isAutocommit { try? run(StoreSchema.SQL.rollback) }
                return nil
            }
        }
        let next = revision + UInt64(group.count)
        do {
            try finishTransaction(revision: next, beforeCommit: beforeCommit)
        } catch {
            return failAll(group, StoreError(error, location: connection.path))
        }
        let first = revision
        revision = next
        return (1...group.count).map { .success(first + UInt64($0)) }
    }

    private func commit(
        _ group: [Work], usesSavepoints: Bool, beforeCommit: (@Sendable () -> Void)?
    ) -> [Result<UInt64, StoreError>] {
        do {
            try run(StoreSchema.SQL.begin)
        } catch {
            return failAll(group, StoreError(error, location: connection.path))
        }
        var results: [Result<UInt64, StoreError>] = []
        results.reserveCapacity(group.count)
        var next = revision
        // A lone submission needs no savepoint: if it fails, rolling back the transaction undoes exactly it.
        for work in group {
            switch usesSavepoints ? applyInSavepoint(work) : applyAll(work) {
            case .success:
                next += 1
                results.append(.success(next))
            case .failure(let error) where !usesSavepoints || connection.isAutocommit:
                // Without savepoints, or when SQLite ended the transaction itself (earlier submissions are gone
                // too), the whole group fails.
                return failAll(group, error)
            case .failure(let error):
                results.append(.failure(error))
            }
        }
        do {
            try finishTransaction(revision: next, beforeCommit: beforeCommit)
        } catch {
            return failAll(group, StoreError(error, location: connection.path))
        }
        revision = next
        return results
    }

    /// Records `revision` when it moved, runs the test hook and commits the open transaction.
    private func finishTransaction(revision next: UInt64, beforeCommit: (@Sendable () -> Void)?) throws(SQLiteError) {
        if next != revision {
            let write = try cache.statement(StoreSchema.SQL.writeMeta)
            try write.bind(StoreSchema.MetaName.revision, at: 1)
            try write.bind(Int64(next), at: 2)
            try write.run()
        }
        beforeCommit?()
        try run(StoreSchema.SQL.commit)
    }

    /// Checkpoints the WAL into the database file and closes the connection.
    func close() {
        cache.removeAll()
        _ = try? connection.queryText("PRAGMA wal_checkpoint(TRUNCATE)")
        try? connection.close()
        sequence.sync()
    }

    private func applyAll(_ work: Work) -> Result<Void, StoreError> {
        do throws(StoreError) {
            try apply(work)
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    private func apply(_ work: Work) throws(StoreError) {
        for mutation in work.mutations { try apply(mutation) }
        if let rows = work.rows { try apply(rows) }
    }

    /// Writes the rows of `source`, piece by piece. A helper on another core makes the pieces in order; this
    /// thread writes each one as soon as it is made, and makes the next one itself when the helper has not started
    /// it yet, so that both cores make rows while SQLite is not the one behind (see `RowPieces`).
    private func apply(_ source: any StoreRowSource) throws(StoreError) {
        let pieces = RowPieces(source)
        guard pieces.count > 0 else { return }
        if pieces.count > 1 { DispatchQueue.global(qos: .userInitiated).async { pieces.makeAll() } }
        defer { pieces.stop() }
        for piece in 0..<pieces.count {
            for mutation in pieces.take(piece) { try apply(mutation) }
        }
    }

    private func applyInSavepoint(_ work: Work) -> Result<Void, StoreError> {
        do {
            try run(StoreSchema.SQL.savepoint)
        } catch {
            return .failure(StoreError(error, location: connection.path))
        }
        do throws(StoreError) {
            try apply(work)
            try sqlite { () throws(SQLiteError) in try run(StoreSchema.SQL.release) }
            return .success(())
        } catch {
            if !connection.isAutocommit {
                do {
                    try run(StoreSchema.SQL.rollbackToSavepoint)
                    try run(StoreSchema.SQL.release)
                } catch {
                    try? run(StoreSchema.SQL.rollback)
                    return .failure(StoreError(error, location: connection.path))
                }
            }
            return .failure(error)
        }
    }

    /// Runs a cached parameterless statement (transaction control is prepared once, not parsed per call).
    private func run(_ sql: String) throws(SQLiteError) {
        try cache.statement(sql).run()
    }

    /// The key, value and priority text of the row being written, as UTF-8: reused by every mutation, so a row's
    /// text is neither allocated nor validated as a `String` again (a publish writes 12,000 rows in one commit).
    private var keyText: [UInt8] = []
    private var valueText: [UInt8] = []
    private var priorityText: [UInt8] = []

    private func apply(_ mutation: StoreMutation) throws(StoreError) {
        try StoreSchema.key(for: mutation.path, into: &keyText)
        switch mutation {
        case .deleteSubtree:
            try sqlite { () throws(SQLiteError) in try deleteSubtree() }
        case .deleteRow:
            try sqlite { () throws(SQLiteError) in
                let exact = try cache.statement(StoreSchema.SQL.deleteKey)
                try exact.bind(utf8: keyText, at: 1)
                try exact.run()
            }
        case .putLeaf(let path, let value, let priority):
            try LeafCodec.encode(value, path: path, into: &valueText)
            if let priority { try LeafCodec.encode(priority, path: path, into: &priorityText) }
            try sqlite { () throws(SQLiteError) in
                try upsert(kind: .leaf, hasValue: true, hasPriority: priority != nil)
            }
        case .putPriority(let path, let priority):
            try LeafCodec.encode(priority, path: path, into: &priorityText)
            try sqlite { () throws(SQLiteError) in try upsert(kind: .priority, hasValue: false, hasPriority: true) }
        }
    }

    /// Deletes the row at `keyText` and the rows below it (see "SUBTREE RANGES" in StoreSchema).
    private func deleteSubtree() throws(SQLiteError) {
        if keyText.isEmpty {
            try cache.statement(StoreSchema.SQL.deleteAll).run()
            return
        }
        let exact = try cache.statement(StoreSchema.SQL.deleteKey)
        try exact.bind(utf8: keyText, at: 1)
        try exact.run()
        let range = try cache.statement(StoreSchema.SQL.deleteRange)
        keyText.append(UInt8(ascii: "/"))
        try range.bind(utf8: keyText, at: 1)
        keyText[keyText.count - 1] = UInt8(ascii: "0")
        try range.bind(utf8: keyText, at: 2)
        try range.run()
    }

    /// Writes the row at `keyText` with `valueText` and `priorityText` where present (NULL where not).
    private func upsert(kind: StoredEntry.Kind, hasValue: Bool, hasPriority: Bool) throws(SQLiteError) {
        let statement = try cache.statement(StoreSchema.SQL.upsertNode)
        try statement.bind(utf8: keyText, at: 1)
        try statement.bind(kind.rawValue, at: 2)
        if hasValue { try statement.bind(utf8: valueText, at: 3) } else { try statement.bind(nil as String?, at: 3) }
        if hasPriority {
            try statement.bind(utf8: priorityText, at: 4)
        } else {
            try statement.bind(nil as String?, at: 4)
        }
        try statement.run()
    }

    /// Runs `body`, reporting an SQLite failure as a `StoreError` naming this file.
    private func sqlite(_ body: () throws(SQLiteError) -> Void) throws(StoreError) {
        do { try body() } catch { throw StoreError(error, location: connection.path) }
    }

    private func failAll(_ group: [Work], _ error: StoreError) -> [Result<UInt64, StoreError>] {
        if !connection.isAutocommit { try? run(StoreSchema.SQL.rollback) }
        return Array(repeating: .failure(error), count: group.count)
    }
}
