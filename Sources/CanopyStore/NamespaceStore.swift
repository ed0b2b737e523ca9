// NamespaceStore -- one namespace's SQLite file, written on a shared store pool with group commit.
import CanopyCore
import Dispatch
import Foundation
import Synchronization

/// The persistent copy of one namespace's tree, in one SQLite file.
///
/// Writes go through `submit(_:completion:)`, from any thread. The store's writer lane on a `StorePool` owns the
/// write connection (SQLite never runs on an event loop or the Swift concurrency pool, where a blocking fsync
/// would starve other work; and a fixed pool, not a thread per store, runs every store of a daemon). Everything
/// submitted while a transaction commits goes into the next transaction together (group commit); a completion
/// runs only once its transaction is durable (WAL, synced after each commit by default, on the store's syncer
/// lane while the writer goes on: see `WALSyncer`), and an optional `visible` callback runs in between, once the
/// transaction is in the WAL and would survive a crash of this process.
///
/// ```swift
/// let store = try NamespaceStore(path: directory.storePath(for: "chat"), options: StoreOptions(), pool: pool)
/// try store.loadAll { entry in tree.insert(entry) }               // at start-up, off the event loop
/// store.submit(StoreMutation.replacingSubtree(at: ["rooms", "a"], with: value)) { result in
///     // on a pool thread: acknowledge the client, or report the failure
/// }
/// store.flushAndClose()                                           // at shutdown
/// ```
public final class NamespaceStore: Sendable {
    /// The database file.
    public let path: String
    private let queue = SubmissionQueue()
    private let writer: WriterState
    private let lane: StoreLane<SubmissionQueue.Item>
    private let pool: StorePool
    /// Signalled once the writer connection is closed (a latch: each waiter signals it again).
    private let writerFinished = DispatchSemaphore(value: 0)

    /// Opens (creating if needed) the store at `path`, on the calling thread, and runs its writes on `pool`.
    ///
    /// A new file is created with mode 0600. The file is switched to WAL mode and migrated to the current schema.
    /// This is blocking SQLite work: call it from a store thread (`StorePool.run`), never from an event loop.
    /// - Parameters:
    ///   - path: the database file, normally from `DataDirectory.storePath(for:)`.
    ///   - options: durability and limits.
    ///   - pool: the threads that run the store's writes and WAL syncs.
    /// - Throws: `StoreError` when the file cannot be created, opened or migrated (`.unsupportedSchemaVersion`
    ///   for a file written by a newer Canopy).
    public convenience init(path: String, options: StoreOptions = StoreOptions(), pool: StorePool = .shared)
        throws(StoreError)
    {
        let state = WriterState()
        try state.open(path: path, options: options, pool: pool)
        self.init(path: path, options: options, pool: pool, state: state)
    }

    /// A store whose file is created and opened on its writer lane, before its first submission: nothing here
    /// blocks. A failure to open fails the submissions that found it closed; the next submission tries again.
    public convenience init(openingLater path: String, options: StoreOptions = StoreOptions(), pool: StorePool) {
        self.init(path: path, options: options, pool: pool, state: WriterState())
    }

    private init(path: String, options: StoreOptions, pool: StorePool, state: WriterState) {
        self.path = path
        self.pool = pool
        self.writer = state
        let queue = self.queue
        if let writer = state.writer { queue.revision.store(writer.revision, ordering: .releasing) }
        queue.isOpen.store(state.writer != nil, ordering: .releasing)
        lane = StoreLane(pool: pool) { items in
            Self.consume(items, state: state, queue: queue, options: options, path: path, pool: pool)
        }
    }

    deinit { flushAndClose() }

    /// The revision of the last committed submission (0 for a new store). Survives reopening.
    public var revision: UInt64 { queue.revision.load(ordering: .acquiring) }

    /// Transactions committed since the store was opened (with `revision`, shows how well writes are grouped).
    public var transactionCount: UInt64 { queue.transactionCount.load(ordering: .relaxed) }

    /// Whether the file is open: false for a store `openingLater` until its first submission opened it.
    public var isOpen: Bool { queue.isOpen.load(ordering: .acquiring) }

    /// Queues `mutations` to be applied atomically, after everything submitted before.
    ///
    /// Thread-safe. `completion` runs on a store thread, in submission order, once the mutations are durable
    /// (`synchronous = .full`: the WAL is synced; `.normal`: COMMIT returned), with the submission's revision
    /// (each successful submission gets the next one). On failure nothing of the submission is stored: a refused
    /// mutation fails its own submission only; a failed transaction (disk full, I/O error) fails every submission
    /// in it. After `flushAndClose()` the completion runs at once, on the caller's thread, with `.closed`. A
    /// completion must not block for long (it holds a thread every store shares).
    /// - Parameters:
    ///   - mutations: applied in order, all or nothing.
    ///   - rows: further rows, made by the writer while it writes them, after `mutations` and in the same
    ///     transaction (see `StoreRowSource`).
    ///   - visible: called on a store thread, in submission order and before `completion`, as soon as the
    ///     COMMIT wrote the mutations to the WAL — from then on they survive a crash of this process (`kill -9`),
    ///     and with `.full` the WAL sync that makes them survive power loss follows. Not called on failure.
    ///     (If that sync fails, `completion` reports the failure after `visible` ran.)
    ///   - visibleMayWaitForSync: `visible` may be called after the WAL sync, right before `completion`, when the
    ///     sync follows on the same thread: for a caller that nobody waits on to be told early (a namespace
    ///     without listeners), whose thread is then woken once per durable write instead of twice. (When that
    ///     sync fails, `visible` is not called.)
    ///   - completion: called exactly once.
    public func submit(
        _ mutations: [StoreMutation], rows: (any StoreRowSource)? = nil, visible: (@Sendable () -> Void)? = nil,
        visibleMayWaitForSync: Bool = false, completion: @escaping @Sendable (Result<UInt64, StoreError>) -> Void
    ) {
        let submission = SubmissionQueue.Submission(
            mutations: mutations, rows: rows, visible: visible, visibleMayWait: visibleMayWaitForSync,
            completion: completion)
        if !lane.enqueue(.submission(submission)) {
            completion(.failure(StoreError(.closed, "the store is closed", location: path)))
        }
    }

    /// Runs `body` on a store thread once every submission made before has been committed or has failed (its
    /// completion may still wait for the WAL sync): a read there sees the file as those submissions left it,
    /// and none of those submitted after. On a closed store `body` runs soon, on a store thread.
    public func afterQueuedWrites(_ body: @escaping @Sendable () -> Void) {
        if !lane.enqueue(.afterWrites(body)) { pool.run(body) }
    }

    /// Waits for every queued submission to commit, checkpoints the WAL into the database file and closes it.
    ///
    /// Idempotent and thread-safe; every caller waits until the file is closed. Later submissions fail with
    /// `.closed`. Called from a store thread (a completion) it does not wait (that thread may be needed to
    /// finish the work): it stops new submissions and returns, and the file is closed after the queued work.
    public func flushAndClose() {
        closeWhenDrained {}
        if pool.isCurrentThreadInPool { return }
        writerFinished.wait()
        writerFinished.signal()  // a latch: let every other caller through too
    }

    /// Stops new submissions and closes the file after the queued ones, without waiting: `closed` runs on a store
    /// thread once the file is closed (and only for the first call).
    public func closeWhenDrained(_ closed: @escaping @Sendable () -> Void) {
        let state = writer
        let finished = writerFinished
        lane.close {
            let done: @Sendable () -> Void = {
                state.close()
                finished.signal()
                closed()
            }
            if let syncer = state.syncer { syncer.drain(then: done) } else { done() }
        }
    }

    /// Runs the writer lane's items in order: consecutive submissions as groups, `afterWrites` work in between.
    private static func consume(
        _ items: [SubmissionQueue.Item], state: WriterState, queue: SubmissionQueue, options: StoreOptions,
        path: String, pool: StorePool
    ) {
        var index = 0
        while index < items.count {
            var submissions: [SubmissionQueue.Submission] = []
            while index < items.count, case .submission(let submission) = items[index] {
                submissions.append(submission)
                index += 1
            }
            if !submissions.isEmpty {
                write(
                    submissions, state: state, queue: queue, options: options, path: path, pool: pool,
                    endsTheRun: index == items.count)
            }
            if index < items.count, case .afterWrites(let body) = items[index] {
                body()
                index += 1
            }
        }
    }

    /// Commits `submissions`, one transaction per group, opening the file first if it is not open.
    ///
    /// A group is a run of submissions cut after `maximumMutationsPerTransaction` mutations (always at least one
    /// submission).
    ///
    /// When `endsTheRun` (nothing else of the lane's run follows) and no checkpoint is due, the last group's WAL sync
    /// runs on this thread once the run returns, instead of waking another thread for it: one context switch less
    /// per durable write. A busy store still overlaps the two, because the next commit's run wakes a thread.
    private static func write(
        _ submissions: [SubmissionQueue.Submission], state: WriterState, queue: SubmissionQueue,
        options: StoreOptions, path: String, pool: StorePool, endsTheRun: Bool
    ) {
        if state.writer == nil {
            do throws(StoreError) {
                try state.open(path: path, options: options, pool: pool)
            } catch {
                // Nothing was ever committed through this store, so no completion can be waiting for a sync.
                for submission in submissions { submission.completion(.failure(error)) }
                return
            }
            queue.revision.store(state.writer?.revision ?? 0, ordering: .releasing)
            queue.isOpen.store(true, ordering: .releasing)
        }
        guard let writer = state.writer else { return }
        var head = 0
        while head < submissions.count {
            var end = head
            var mutationCount = 0
            while end < submissions.count,
                end == head
                    || mutationCount + submissions[end].rowCount <= options.maximumMutationsPerTransaction
            {
                mutationCount += submissions[end].rowCount
                end += 1
            }
            let group = submissions[head..<end]
            head = end
            let started = monotonicNanoseconds()
            var results = writer.commit(group.map(\.work), beforeCommit: options.beforeCommit)
            options.commitLatency?.observe(since: started)
            queue.revision.store(writer.revision, ordering: .releasing)
            queue.transactionCount.add(1, ordering: .relaxed)
            let syncsHere = endsTheRun && head == submissions.count && !writer.isCheckpointDue
            // Told with their completions, after the sync on this thread, when none of the group needs it sooner.
            let deferVisible = state.syncer != nil && syncsHere && group.allSatisfy(\.visibleMayWait)
            var committed = false
            for (submission, result) in zip(group, results) {
                guard case .success = result else { continue }
                committed = true
                if !deferVisible { submission.visible?() }
            }
            if let syncer = state.syncer {
                // Even a failed group goes through the syncer: completions must keep submission order.
                syncer.hand(
                    WALSyncer.Batch(
                        completions: group.map(\.completion), results: results,
                        visibles: deferVisible ? group.map(\.visible) : []),
                    followingOnThisThread: syncsHere)
                continue
            }
            if committed {
                // The WAL first (with `.full`), then the record of it (see CommitSequenceFile).
                do throws(StoreError) {
                    if writer.syncsAfterCommit { try writer.syncWAL() }
                    try writer.sequence.record(writer.revision)
                } catch {
                    results = results.map { result in result.flatMap { _ in .failure(error) } }
                }
            }
            for (submission, result) in zip(group, results) {
                submission.completion(result)
            }
        }
        writer.checkpointIfDue()
    }

    /// Creates `path` with mode 0600 when it does not exist (SQLite's WAL and shm files copy its mode).
    static func createPrivateFile(at path: String) throws(StoreError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(.fileSystem, "cannot create the store file (errno \(errno))", location: path)
        }
        close(descriptor)
    }
}

/// The writer lane's connection and WAL syncer.
///
/// `@unchecked Sendable`: touched only by the runs of one store's writer lane (or, before the store exists, by
/// the thread opening it) and, after that lane drained, by its close continuation; each of those happens-before
/// the next through the lane's lock.
final class WriterState: @unchecked Sendable {
    private(set) var writer: StoreWriter?
    private(set) var syncer: WALSyncer?

    /// Creates and opens the file and its WAL syncer.
    func open(path: String, options: StoreOptions, pool: StorePool) throws(StoreError) {
        try NamespaceStore.createPrivateFile(at: path)
        let opened = try StoreWriter(path: path, options: options)
        writer = opened
        syncer =
            opened.syncsAfterCommit
            ? WALSyncer(
                databasePath: path, sequence: opened.sequence, beforeSync: options.beforeSync,
                latency: options.syncLatency, pool: pool)
            : nil
    }

    /// Checkpoints and closes the connection (after the syncer drained).
    func close() {
        writer?.close()
        writer = nil
        syncer = nil
    }
}
