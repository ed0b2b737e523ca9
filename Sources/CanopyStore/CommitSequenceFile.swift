// CommitSequenceFile -- the last committed revision of a store, kept outside SQLite so a lost WAL is noticed.
//
// WHY
//   SQLite recovers a WAL silently: a WAL that was deleted, truncated, or whose header or frames were overwritten
//   is read up to its last valid commit frame (or not at all), and the database opens at an older revision
//   without an error. The revision stored in the database (`meta.revision`) is lost together with the frames, so
//   the loss can only be seen by comparing it with a copy that does not live in the WAL.
//
// FILE FORMAT (`<namespace>.sqlite-seq`, mode 0600, 24 bytes, little-endian)
//   0   8  magic "CnpySeq1"
//   8   8  revision: the last committed submission recorded
//   16  8  check: revision XOR 0x5EC0_5EC0_5EC0_5EC0 (tells a torn or foreign file from a real record)
//   Rewritten in place with one pwrite (a single sector: it is never torn in practice).
//
// WHEN IT IS WRITTEN (the invariant: the recorded revision is never ahead of what the database can recover)
//   - `synchronous = .full`: by the WAL syncer, after the fdatasync of the WAL and before the writers are
//     acknowledged. So every acknowledged revision is recorded (a `kill -9` loses no record), and a record
//     never reaches the disk before the frames it describes (a power loss leaves it behind, never ahead).
//   - `synchronous = .normal`: by the writer, after COMMIT returned (the frames are in the page cache).
//   The record itself is not synced per commit (that would be a second fsync per group): after a power loss it
//   may be older than the WAL, which only narrows what is detected. It is synced when the file is closed and
//   when a loss is accepted. Cost: one 24-byte pwrite per synced group.
//
// WHAT IS DETECTED
//   On open, the revision SQLite recovers is compared with the record. Lower means committed submissions are
//   missing: the store refuses to open (`StoreError.Kind.dataLoss`) unless the operator accepts the loss
//   (`StoreOptions.acceptsDataLoss`), which re-baselines the record to the recovered revision. Higher is normal
//   (the record lags by the commits made since its last write). No record (a store from before this file
//   existed, or copied without it) is trusted as it is and recorded. A WAL damaged only past its last commit
//   frame loses nothing and is not reported; a WAL deleted after a complete checkpoint neither.

import CanopyCore
import Foundation

/// The side file holding a store's last committed revision. Thread-safe (one descriptor, positioned writes).
final class CommitSequenceFile: Sendable {
    /// The side file of the store at `databasePath`.
    static func path(for databasePath: String) -> String { databasePath + "-seq" }

    static let magic: [UInt8] = Array("CnpySeq1".utf8)
    static let checkMask: UInt64 = 0x5EC0_5EC0_5EC0_5EC0
    static let size = 24

    /// What the side file holds.
    enum Record: Equatable {
        /// No side file (a new store, or one from before side files existed).
        case absent
        /// The last recorded revision.
        case revision(UInt64)
        /// The file exists but is not a valid record.
        case unreadable
    }

    let path: String
    private let descriptor: Int32

    /// Opens (creating with mode 0600) the side file at `path`.
    init(path: String) throws(StoreError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StoreError(.fileSystem, "cannot open the commit sequence file (errno \(errno))", location: path)
        }
        self.path = path
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// Reads the record at `path` without creating it.
    static func read(at path: String) -> Record {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT ? .absent : .unreadable }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: size)
        let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, size, 0) }
        // Created but killed before its first record: nothing was recorded.
        if count == 0 { return .absent }
        guard count == size, Array(bytes[0..<8]) == magic else { return .unreadable }
        let revision = littleEndian(bytes[8..<16])
        guard littleEndian(bytes[16..<24]) == revision ^ checkMask else { return .unreadable }
        return .revision(revision)
    }

    /// Records `revision` (one pwrite, not synced).
    /// - Throws: `.fileSystem` when the write fails.
    func record(_ revision: UInt64) throws(StoreError) {
        var bytes = Self.magic
        bytes.reserveCapacity(Self.size)
        for value in [revision, revision ^ Self.checkMask] {
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
        }
        let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, Self.size, 0) }
        guard written == Self.size else {
            throw StoreError(
                .fileSystem, "cannot write the commit sequence file (errno \(errno))", location: path)
        }
    }

    /// Makes the last record durable.
    func sync() {
        while fdatasync(descriptor) != 0 && errno == EINTR {}
    }

    private static func littleEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reversed().reduce(0) { ($0 << 8) | UInt64($1) }
    }
}

/// Committed submissions a store's file no longer holds: found when it was opened (see `CommitSequenceFile`).
public struct MissingCommits: Sendable, Equatable {
    /// The last revision recorded as committed, outside the WAL.
    public let expected: UInt64
    /// The revision SQLite recovered from the database and its WAL.
    public let found: UInt64
}
