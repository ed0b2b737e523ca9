// WALSyncer -- makes committed transactions survive power loss, on a pool thread, while the writer goes on.
//
// A store's SQLite connection runs with `synchronous=NORMAL`: COMMIT returns once the transaction is written to
// the WAL (it survives a crash of the process). For `synchronous = .full` the WAL must then be synced before the
// submissions are acknowledged. Syncing on the writer thread would hold the next transaction back by a whole
// fsync; here the writer hands each committed group over and starts the next one, and one fdatasync covers every
// group handed over before it — the same group commit, one stage later. Completions run in submission order.
//
// Why an own descriptor is safe: fdatasync flushes the file's data whichever descriptor wrote it. The WAL keeps
// its inode while the writer's connection is open (SQLite truncates it, never unlinks it, until the last
// connection closes), and this syncer is drained before the writer closes. Checkpoints need nothing from here:
// with `synchronous=NORMAL` SQLite syncs the WAL before a checkpoint and the database file after it, so frames
// it later overwrites are already durable in the database file.

import CanopyCore
import Dispatch
import Foundation

/// The sync stage of a store with `synchronous = .full`: a lane of the store's pool. Thread-safe.
final class WALSyncer: Sendable {
    /// Completions of one committed group and their results.
    struct Batch: Sendable {
        var completions: [@Sendable (Result<UInt64, StoreError>) -> Void]
        var results: [Result<UInt64, StoreError>]
        /// `visible` callbacks deferred to the sync (one per completion), or empty when they ran at the commit.
        var visibles: [(@Sendable () -> Void)?] = []
    }

    private let descriptor: Int32
    private let lane: StoreLane<Batch>

    /// Opens the WAL of the database at `databasePath`; nil when it cannot be opened (the writer then syncs
    /// through SQLite itself, on its own lane).
    /// - Parameters:
    ///   - beforeSync: a test hook, called on the syncing thread before each sync.
    ///   - pool: the threads the syncs run on.
    ///   - sequence: where the last synced revision is recorded, after each sync and before the completions run.
    ///   - latency: where each sync's duration is recorded (metrics), if anywhere.
    init?(
        databasePath: String, sequence: CommitSequenceFile, beforeSync: (@Sendable () -> Void)? = nil,
        latency: LatencyHistogram? = nil, pool: StorePool
    ) {
        let wal = databasePath + "-wal"
        let fd = open(wal, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        descriptor = fd
        lane = StoreLane(pool: pool) { taken in
            Self.sync(taken, descriptor: fd, path: wal, sequence: sequence, beforeSync: beforeSync, latency: latency)
        }
    }

    deinit { close(descriptor) }

    /// Queues a committed group; its completions run after the next sync.
    ///
    /// - Parameter followingOnThisThread: the caller (the writer lane's run) returns to the pool right after, so
    ///   the sync may run on its thread instead of waking another one.
    func hand(_ batch: Batch, followingOnThisThread: Bool = false) {
        _ = lane.enqueue(batch, wakingAThread: !followingOnThisThread)
    }

    /// Whether the calling thread is syncing for this store now (a completion called from it).
    var isRunningOnCurrentThread: Bool { lane.isRunningOnCurrentThread }

    /// Syncs and completes everything handed over, then runs `then` (on a pool thread). Call once.
    func drain(then: @escaping @Sendable () -> Void) {
        lane.close(then: then)
    }

    private static func sync(
        _ taken: [Batch], descriptor: Int32, path: String, sequence: CommitSequenceFile,
        beforeSync: (@Sendable () -> Void)?, latency: LatencyHistogram?
    ) {
        var failure: StoreError?
        beforeSync?()
        let started = monotonicNanoseconds()
        while fdatasync(descriptor) != 0 {
            let code = errno
            if code == EINTR { continue }
            failure = StoreError(.fileSystem, "syncing the WAL failed (errno \(code))", location: path)
            break
        }
        latency?.observe(since: started)
        // Recorded only once the frames are durable, so the record is never ahead of what can be recovered, and
        // before any acknowledgement, so every acknowledged revision is recorded (see CommitSequenceFile).
        if failure == nil, let last = lastRevision(in: taken) {
            do throws(StoreError) { try sequence.record(last) } catch { failure = error }
        }
        for batch in taken {
            for (index, (completion, result)) in zip(batch.completions, batch.results).enumerated() {
                if let failure, case .success = result {
                    completion(.failure(failure))
                } else {
                    if case .success = result, index < batch.visibles.count { batch.visibles[index]?() }
                    completion(result)
                }
            }
        }
    }

    /// The highest revision committed in `batches`, nil when none committed.
    static func lastRevision(in batches: [Batch]) -> UInt64? {
        var last: UInt64?
        for batch in batches {
            for case .success(let revision) in batch.results { last = max(last ?? 0, revision) }
        }
        return last
    }
}
