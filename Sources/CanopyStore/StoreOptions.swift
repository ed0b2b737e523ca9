// StoreOptions -- durability and size settings for a namespace store.

public import CanopyCore

/// Settings for opening a `NamespaceStore` (and `SQLiteBaseline`, so benchmarks compare like with like).
public struct StoreOptions: Sendable {
    /// SQLite's `PRAGMA synchronous` in WAL mode.
    public enum Synchronous: String, Sendable {
        /// fsync the WAL on every commit: an acknowledged write survives power loss. The default.
        case full = "FULL"
        /// fsync only at checkpoints: an acknowledged write survives a process crash (`kill -9`) but the
        /// last commits may be lost on power failure.
        case normal = "NORMAL"
    }

    /// How hard each commit waits for the disk. Default `.full`.
    public var synchronous: Synchronous = .full
    /// WAL pages after which a commit also checkpoints (`PRAGMA wal_autocheckpoint`). Default 1000 (SQLite's).
    public var walAutocheckpoint: Int = 1000
    /// Page-cache size in KiB for the writer connection (`PRAGMA cache_size = -N`). Default 65536 (64 MiB), an
    /// upper bound: the cache holds only pages the writer touched, so never more than the file. A publish to
    /// 10,000 attendees updates a page per attendee; with 8 MiB most of them were read back from the kernel on
    /// every publish, and its COMMIT took twice as long (Architecture.md#Publishing-item-by-item).
    public var cacheSizeKiB: Int = 65536
    /// Upper bound on the database size in pages (`PRAGMA max_page_count`), or `nil` for SQLite's default.
    /// A write that would grow past it fails with `SQLITE_FULL`, like a full disk.
    public var maximumPageCount: Int? = nil
    /// Most mutations applied in one transaction before the writer commits and starts another.
    /// Bounds a commit's latency and the WAL's growth under a flood of writes. Default 10 000.
    public var maximumMutationsPerTransaction: Int = 10_000

    /// Open the file even when committed submissions are missing from it (a lost or damaged WAL, see
    /// `CommitSequenceFile`): serve what SQLite recovered and record its revision as the new baseline.
    /// Default false: such a store refuses to open with `StoreError.Kind.dataLoss`.
    public var acceptsDataLoss: Bool = false
    /// Where each transaction's duration (mutations and COMMIT, in seconds) is recorded, if anywhere (metrics).
    public var commitLatency: LatencyHistogram? = nil
    /// Where each fdatasync of the WAL is timed (`synchronous = .full` only), if anywhere (metrics).
    public var syncLatency: LatencyHistogram? = nil

    /// Test hook: called on the writer thread after a group's mutations are applied and before COMMIT.
    package var beforeCommit: (@Sendable () -> Void)? = nil
    /// Test hook: called on the sync thread before each sync of the WAL (`synchronous = .full` only).
    package var beforeSync: (@Sendable () -> Void)? = nil

    /// Default settings: WAL, `synchronous=FULL`.
    public init() {}

    /// Settings with the given durability.
    public init(synchronous: Synchronous) {
        self.synchronous = synchronous
    }
}
