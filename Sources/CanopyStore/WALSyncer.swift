// WALSyncer -- makes committed transactions survive power loss, on its own thread, while the writer goes on.
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

import Dispatch
import Foundation

/// The sync stage of a store with `synchronous = .full`. Thread-safe.
final class WALSyncer: Sendable {
    /// Completions of one committed group and their results.
    struct Batch: Sendable {
        var completions: [@Sendable (Result<UInt64, StoreError>) -> Void]
        var results: [Result<UInt64, StoreError>]
    }

    private let descriptor: Int32
    private let path: String
    private let batches = HandoffQueue<Batch>()
    private let beforeSync: (@Sendable () -> Void)?
    private let finished = DispatchSemaphore(value: 0)

    /// Opens the WAL of the database at `databasePath` and starts the thread; nil when the WAL cannot be opened
    /// (the writer then syncs through SQLite itself, on its own thread).
    /// - Parameters:
    ///   - beforeSync: a test hook, called on the thread before each sync.
    ///   - started: called on the new thread with its `pthread_t`, before any completion runs there.
    init?(
        databasePath: String, beforeSync: (@Sendable () -> Void)? = nil, started: @escaping @Sendable (UInt) -> Void
    ) {
        let wal = databasePath + "-wal"
        let fd = open(wal, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        descriptor = fd
        path = wal
        self.beforeSync = beforeSync
        let thread = Thread { [self] in
            started(UInt(pthread_self()))
            run()
            finished.signal()
        }
        thread.name = "canopy.store.sync"
        thread.start()
    }

    deinit { close(descriptor) }

    /// Queues a committed group; its completions run after the next sync.
    func hand(_ batch: Batch) {
        _ = batches.enqueue(batch)
    }

    /// Syncs and completes everything handed over, then stops the thread. Call once, from the writer thread.
    func drainAndStop() {
        _ = batches.close()
        finished.wait()
    }

    private func run() {
        while let taken = batches.takeAll() {
            var failure: StoreError?
            beforeSync?()
            while fdatasync(descriptor) != 0 {
                let code = errno
                if code == EINTR { continue }
                failure = StoreError(.fileSystem, "syncing the WAL failed (errno \(code))", location: path)
                break
            }
            for batch in taken {
                for (completion, result) in zip(batch.completions, batch.results) {
                    if let failure, case .success = result {
                        completion(.failure(failure))
                    } else {
                        completion(result)
                    }
                }
            }
        }
    }
}
