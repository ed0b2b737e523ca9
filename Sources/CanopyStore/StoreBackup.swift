// StoreBackup -- consistent snapshots of a live store file, and the checked, atomic swap of a backup into place.
//
// A snapshot is `VACUUM INTO` from its own connection: a read transaction in WAL mode sees exactly the commits
// made before it began (every acknowledged write) and none made while it runs, and the writer goes on meanwhile.
// The copy is switched to rollback-journal mode so that it is one self-contained file.
//
// A restore never touches the live file until the new one is whole: the backup is written beside it under a
// temporary name and fsynced, then checked (SQLite's integrity check, the Canopy application id, the schema
// version), and only then renamed over the live file -- the one atomic step -- and the directory fsynced. The
// live store must be closed first: its close checkpoints the WAL into the file and deletes the WAL, so that no
// stale WAL can be replayed onto the new file. A `kill -9` before the rename leaves the old store, after it the
// new one; a leftover temporary file (`.<namespace>.restore-*`) is never mistaken for a store.
import CSQLite
import CanopyCore
import Foundation

/// Snapshot, verification and installation of backup files.
public enum StoreBackup {
    /// A consistent copy of one store.
    public struct Snapshot: Sendable {
        /// The backup file's content.
        public var bytes: [UInt8]
        /// The committed revision the snapshot holds.
        public var lastCommit: UInt64
        /// The store schema version of the copy.
        public var schemaVersion: Int64
        /// SHA-256 of `bytes`, lowercase hex.
        public var sha256: String
    }

    /// What a checked backup file holds.
    public struct Checked: Sendable, Equatable {
        public var lastCommit: UInt64
        public var schemaVersion: Int64
    }

    /// Copies the store at `databasePath` at a commit boundary, through a scratch file in `scratchDirectory`.
    ///
    /// Blocking: call it on a store thread. The live file and its writer are not disturbed.
    /// - Throws: `StoreError` when the file cannot be read or the copy cannot be written.
    public static func snapshot(of databasePath: String, scratchDirectory: String) throws(StoreError) -> Snapshot {
        guard access(databasePath, F_OK) == 0 else {
            throw StoreError(.fileSystem, "the store file does not exist", location: databasePath)
        }
        let scratch = scratchDirectory + "/.backup-" + randomSuffix() + ".sqlite"
        defer { removeFileAndCompanions(scratch) }
        do {
            let source = try SQLiteConnection(path: databasePath)
            try source.execute("PRAGMA busy_timeout = 10000")
            let vacuum = try source.prepare("VACUUM INTO ?1")
            try vacuum.bind(scratch, at: 1)
            try vacuum.run()
        } catch {
            throw StoreError(error, location: databasePath)
        }
        testPause("backup-after-copy")
        let checked = try check(fileAt: scratch, switchToRollbackJournal: true)
        let bytes = try readAll(scratch)
        return Snapshot(
            bytes: bytes, lastCommit: checked.lastCommit, schemaVersion: checked.schemaVersion,
            sha256: Hash.sha256Hex(bytes))
    }

    /// Checks that the file at `path` is a whole Canopy store this build can open.
    ///
    /// - Throws: `.invalidBackup` naming what is wrong (not SQLite, damaged, not a Canopy store, newer schema).
    public static func check(fileAt path: String, switchToRollbackJournal: Bool = false) throws(StoreError) -> Checked {
        let header = Array((try readPrefix(path, count: 16)))
        guard header == Array("SQLite format 3\0".utf8) else {
            throw StoreError(.invalidBackup, "the backup is not an SQLite database file")
        }
        do {
            let connection = try SQLiteConnection(path: path)
            if switchToRollbackJournal { _ = try connection.queryText("PRAGMA journal_mode = DELETE") }
            let integrity = try connection.queryText("PRAGMA integrity_check")
            guard integrity == "ok" else {
                throw StoreError(.invalidBackup, "the backup fails SQLite's integrity check: \(integrity ?? "no answer")")
            }
            guard try connection.queryText(StoreSchema.SQL.readApplicationID) == String(StoreSchema.applicationID),
                try connection.queryText(StoreSchema.SQL.hasMeta) == "1",
                let version = try StoreSchema.readMeta(connection, StoreSchema.MetaName.schemaVersion)
            else {
                throw StoreError(.invalidBackup, "the backup is an SQLite database but not a Canopy store")
            }
            guard version >= 1, version <= StoreSchema.currentVersion else {
                throw StoreError(
                    .invalidBackup,
                    "the backup has store schema version \(version); this build reads versions 1 to "
                        + "\(StoreSchema.currentVersion)")
            }
            let revision = try StoreSchema.readMeta(connection, StoreSchema.MetaName.revision) ?? 0
            return Checked(lastCommit: UInt64(max(revision, 0)), schemaVersion: version)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.invalidBackup, "the backup is damaged: \(error)")
        }
    }

    /// Writes `bytes` to a new file at `path` (mode 0600) and fsyncs it.
    ///
    /// - Throws: `.fileSystem` when the file cannot be created, written or synced (a partial file is removed).
    public static func writeDurably(_ bytes: [UInt8], to path: String) throws(StoreError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(.fileSystem, "cannot create the file (errno \(errno))", location: path)
        }
        var written = 0
        var failure: Int32 = 0
        bytes.withUnsafeBytes { buffer in
            while written < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                written += count
            }
        }
        if failure == 0 && fsync(descriptor) != 0 { failure = errno }
        close(descriptor)
        if failure != 0 {
            unlink(path)
            throw StoreError(.fileSystem, "cannot write the file (errno \(failure))", location: path)
        }
    }

    /// fsyncs a directory, so that the renames in it survive power loss.
    public static func syncDirectory(_ path: String) throws(StoreError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StoreError(.fileSystem, "cannot open the directory (errno \(errno))", location: path)
        }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else {
            throw StoreError(.fileSystem, "cannot sync the directory (errno \(errno))", location: path)
        }
    }

    /// Renames the checked, synced file `temporaryPath` over the closed store `livePath` (same directory).
    ///
    /// - Throws: `.fileSystem` when the live store still has a WAL with commits (it was not closed cleanly: then
    ///   nothing is replaced) or the rename fails.
    public static func install(_ temporaryPath: String, over livePath: String) throws(StoreError) {
        let wal = livePath + "-wal"
        var info = stat()
        if stat(wal, &info) == 0 && info.st_size > 0 {
            throw StoreError(
                .fileSystem, "the live store still has a WAL (it is open elsewhere?): nothing was replaced",
                location: livePath)
        }
        unlink(wal)
        unlink(livePath + "-shm")
        // The commit record outside the WAL counts the old file's commits; a restored (older) file would be taken
        // for one that lost its WAL. Without a record the next open trusts the file and records its revision
        // (Architecture.md#Detecting-a-lost-write-ahead-log); the directory sync below makes the removal durable.
        unlink(CommitSequenceFile.path(for: livePath))
        testPause("restore-before-rename")
        guard rename(temporaryPath, livePath) == 0 else {
            throw StoreError(.fileSystem, "cannot rename the backup over the store (errno \(errno))", location: livePath)
        }
        let directory = (livePath as NSString).deletingLastPathComponent
        try syncDirectory(directory.isEmpty ? "." : directory)
    }

    /// A temporary name beside the store of `namespace` in `directory`, never taken for a store.
    public static func temporaryPath(in directory: String, namespace: String) -> String {
        directory + "/." + namespace + ".restore-" + randomSuffix() + ".sqlite"
    }

    /// Removes a file and any SQLite companions it has.
    public static func removeFileAndCompanions(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
    }

    // MARK: - Helpers

    private static func randomSuffix() -> String {
        String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }

    private static func readAll(_ path: String) throws(StoreError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StoreError(.fileSystem, "cannot read the snapshot", location: path)
        }
        return Array(data)
    }

    private static func readPrefix(_ path: String, count: Int) throws(StoreError) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw StoreError(.fileSystem, "cannot read the file", location: path)
        }
        defer { try? handle.close() }
        return Array((try? handle.read(upToCount: count)) ?? Data())
    }

    /// Test hook: `CANOPY_TEST_PAUSE=<point>:<milliseconds>` sleeps at that point (a test kills the process there).
    static func testPause(_ point: String) {
        guard let value = ProcessInfo.processInfo.environment["CANOPY_TEST_PAUSE"] else { return }
        let parts = value.split(separator: ":")
        guard parts.count == 2, parts[0] == point, let milliseconds = UInt32(parts[1]) else { return }
        usleep(milliseconds * 1000)
    }
}
