// NamespaceStore -- one namespace's SQLite file, written by a dedicated thread with group commit.
import CanopyCore
import Dispatch
import Foundation
import Synchronization

/// The persistent copy of one namespace's tree, in one SQLite file.
///
/// Writes go through `submit(_:completion:)`, from any thread. A dedicated writer thread owns the
/// write connection (SQLite never runs on an event loop or the Swift concurrency pool, where a
/// blocking fsync would starve other work). Everything submitted while a transaction commits goes
/// into the next transaction together (group commit); a completion runs only once its transaction is
/// durable (WAL, synced after each commit by default, on a second thread while the writer goes on: see
/// `WALSyncer`), and an optional `visible` callback runs in between, once the transaction is in the WAL and
/// would survive a crash of this process.
///
/// ```swift
/// let store = try NamespaceStore(path: directory.storePath(for: "chat"), options: StoreOptions())
/// try store.loadAll { entry in tree.insert(entry) }               // at start-up
/// store.submit(StoreMutation.replacingSubtree(at: ["rooms", "a"], with: value)) { result in
///     // on the writer thread: acknowledge the client, or report the failure
/// }
/// store.flushAndClose()                                           // at shutdown
/// ```
public final class NamespaceStore: Sendable {
    /// The database file.
    public let path: String
    private let options: StoreOptions
    private let queue = SubmissionQueue()
    /// Signalled by the writer thread once it has closed its connection.
    private let writerFinished = DispatchSemaphore(value: 0)

    /// Opens (creating if needed) the store at `path` and starts its writer thread.
    ///
    /// A new file is created with mode 0600. The file is switched to WAL mode and migrated to the
    /// current schema.
    /// - Parameters:
    ///   - path: the database file, normally from `DataDirectory.storePath(for:)`.
    ///   - options: durability and limits.
    /// - Throws: `StoreError` when the file cannot be created, opened or migrated (`.unsupportedSchemaVersion`
    ///   for a file written by a newer Canopy).
    public init(path: String, options: StoreOptions = StoreOptions()) throws(StoreError) {
        // Before any property is set: a throw here must not run deinit (which waits for a writer thread).
        try Self.createPrivateFile(at: path)
        self.path = path
        self.options = options

        let opened = Mutex<Result<UInt64, StoreError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [queue, writerFinished] in
            queue.writerThreadID.store(UInt(pthread_self()), ordering: .releasing)
            let writer: StoreWriter
            do throws(StoreError) {
                writer = try StoreWriter(path: path, options: options)
            } catch {
                opened.withLock { $0 = .failure(error) }
                ready.signal()
                writerFinished.signal()
                return
            }
            queue.revision.store(writer.revision, ordering: .releasing)
            let syncer =
                writer.syncsAfterCommit
                ? WALSyncer(databasePath: path, beforeSync: options.beforeSync) { id in
                    queue.syncerThreadID.store(id, ordering: .releasing)
                } : nil
            opened.withLock { $0 = .success(writer.revision) }
            ready.signal()
            Self.runWriter(writer, syncer: syncer, queue: queue, options: options)
            syncer?.drainAndStop()
            writer.close()
            writerFinished.signal()
        }
        thread.name = "canopy.store"
        thread.start()
        ready.wait()
        if case .failure(let error) = opened.withLock({ $0 }) {
            throw error  // deinit runs flushAndClose(), which returns at once: the thread has finished
        }
    }

    deinit { flushAndClose() }

    /// The revision of the last committed submission (0 for a new store). Survives reopening.
    public var revision: UInt64 { queue.revision.load(ordering: .acquiring) }

    /// Transactions committed since the store was opened (with `revision`, shows how well writes are grouped).
    public var transactionCount: UInt64 { queue.transactionCount.load(ordering: .relaxed) }

    /// Queues `mutations` to be applied atomically, after everything submitted before.
    ///
    /// Thread-safe. `completion` runs on a store thread, in submission order, once the mutations are durable
    /// (`synchronous = .full`: the WAL is synced; `.normal`: COMMIT returned), with the submission's revision
    /// (each successful submission gets the next one). On failure nothing of the submission is stored: a refused
    /// mutation fails its own submission only; a failed transaction (disk full, I/O error) fails every submission
    /// in it. After `flushAndClose()` the completion runs at once, on the caller's thread, with `.closed`. A
    /// completion must not block for long or call `flushAndClose()` (it would wait for itself).
    /// - Parameters:
    ///   - mutations: applied in order, all or nothing.
    ///   - visible: called on the writer thread, in submission order and before `completion`, as soon as the
    ///     COMMIT wrote the mutations to the WAL — from then on they survive a crash of this process (`kill -9`),
    ///     and with `.full` the WAL sync that makes them survive power loss follows. Not called on failure.
    ///     (If that sync fails, `completion` reports the failure after `visible` ran.)
    ///   - completion: called exactly once.
    public func submit(
        _ mutations: [StoreMutation], visible: (@Sendable () -> Void)? = nil,
        completion: @escaping @Sendable (Result<UInt64, StoreError>) -> Void
    ) {
        let submission = SubmissionQueue.Submission(mutations: mutations, visible: visible, completion: completion)
        if !queue.enqueue(submission) {
            completion(.failure(StoreError(.closed, "the store is closed", location: path)))
        }
    }

    /// Waits for every queued submission to commit, checkpoints the WAL into the database file and closes it.
    ///
    /// Idempotent and thread-safe; every caller waits until the file is closed. Later submissions fail with
    /// `.closed`. Called from a completion (on the writer thread) it cannot wait for itself: it stops new
    /// submissions and returns, and the writer closes the file after the queued work.
    public func flushAndClose() {
        _ = queue.close()
        let current = UInt(pthread_self())
        if queue.writerThreadID.load(ordering: .acquiring) == current
            || queue.syncerThreadID.load(ordering: .acquiring) == current
        {
            return
        }
        writerFinished.wait()
        writerFinished.signal()  // a latch: let every other caller through too
    }

    /// The writer thread's loop: one transaction per group until the queue closes.
    ///
    /// A group is everything submitted since the last group was taken (group commit), cut after
    /// `maximumMutationsPerTransaction` mutations (always at least one submission).
    private static func runWriter(
        _ writer: StoreWriter, syncer: WALSyncer?, queue: SubmissionQueue, options: StoreOptions
    ) {
        var backlog: [SubmissionQueue.Submission] = []
        var head = 0
        while true {
            if head == backlog.count {
                guard let taken = queue.takeAll() else { return }
                backlog = taken
                head = 0
            }
            var end = head
            var mutationCount = 0
            while end < backlog.count,
                end == head || mutationCount + backlog[end].mutations.count <= options.maximumMutationsPerTransaction
            {
                mutationCount += backlog[end].mutations.count
                end += 1
            }
            let group = backlog[head..<end]
            head = end
            var results = writer.commit(group.map(\.mutations), beforeCommit: options.beforeCommit)
            queue.revision.store(writer.revision, ordering: .releasing)
            queue.transactionCount.add(1, ordering: .relaxed)
            var committed = false
            for (submission, result) in zip(group, results) {
                guard case .success = result else { continue }
                committed = true
                submission.visible?()
            }
            if let syncer {
                // Even a failed group goes through the syncer: completions must keep submission order.
                syncer.hand(WALSyncer.Batch(completions: group.map(\.completion), results: results))
                continue
            }
            if committed && writer.syncsAfterCommit {
                do throws(StoreError) {
                    try writer.syncWAL()
                } catch {
                    results = results.map { result in result.flatMap { _ in .failure(error) } }
                }
            }
            for (submission, result) in zip(group, results) {
                submission.completion(result)
            }
        }
    }

    /// Creates `path` with mode 0600 when it does not exist (SQLite's WAL and shm files copy its mode).
    private static func createPrivateFile(at path: String) throws(StoreError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(.fileSystem, "cannot create the store file (errno \(errno))", location: path)
        }
        close(descriptor)
    }
}
