// StorePool -- a fixed set of store threads shared by every namespace, each store's work in FIFO order.
//
// A thread per store (a writer and a WAL syncer) made 1,000 namespaces 2,000 threads. Here N threads
// (`canopy serve --store-threads`) run jobs from one run queue. Most jobs are runs of a *lane* (`StoreLane`): the
// serial queue of one store's writer, or of its WAL syncer. A lane is on the run queue at most once; a thread
// takes it and hands it everything queued on it so far, in order (group commit: what arrives while a lane runs
// goes into its next run), and puts it back at the end of the run queue when more arrived meanwhile, so one busy
// store cannot starve the others. The writer and the syncer of one store, and lanes of different stores, run in
// parallel on different threads; one lane never runs on two threads at once, and each run happens-before the
// next (through the lane's lock), so a lane may own a non-Sendable SQLite connection (SQLite's multi-thread
// mode: "a single database connection [may be used] in different threads, as long as no two threads use it at
// the same time").
//
// Other jobs are one-off blocking work that must not run on an event loop: loading a namespace's tree.

import Dispatch
import Foundation
import Synchronization

/// A fixed set of threads running store work; `Sendable`, shared by every store of a daemon.
public final class StorePool: Sendable {
    private struct State {
        /// Jobs waiting for a thread, oldest first from `head` (a FIFO without O(n) removal).
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        /// Threads waiting on `wakeup` for a job.
        var idleThreads = 0
        var isStopping = false
        var liveThreads = 0
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    /// The `pthread_t`s of this pool's threads (to refuse waiting for the pool from one of its own threads).
    private let members = Mutex<Set<UInt>>([])
    /// How many threads the pool runs.
    public let threadCount: Int
    /// The threads' name and the nice value added to theirs (kept for a thread started after the others left).
    private let name: String
    private let niceness: Int32

    /// Starts `threads` threads named `name`.
    /// - Parameters:
    ///   - threads: at least 1. A daemon uses `--store-threads` (default 4): with fewer than 2, a store's WAL
    ///     sync and its next commit no longer overlap.
    ///   - name: the threads' name (shown by `top -H`, `/proc/PID/task/*/comm`).
    ///   - niceness: added to the threads' nice value (Linux schedules threads alone): a pool of long CPU-bound
    ///     jobs (publish computations) yields the cores to the event loop.
    public init(threads: Int, name: String = "canopy.store", niceness: Int32 = 0) {
        threadCount = max(1, threads)
        self.name = name
        self.niceness = niceness
        state.withLock { $0.liveThreads = threadCount }
        for _ in 0..<threadCount { startThread() }
    }

    private func startThread() {
        Self.runDetached(name: name, niceness: niceness) { [self] in
            members.withLock { _ = $0.insert(UInt(pthread_self())) }
            work()
        }
    }

    /// The pool of stores opened without one (tools, tests): two threads for the life of the process.
    public static let shared = StorePool(threads: 2)

    /// Runs `job` on one of the pool's threads, after the jobs queued before it have started.
    ///
    /// A job must not wait for other jobs of the same pool (with every thread waiting, nothing would run them).
    public func run(_ job: @escaping @Sendable () -> Void) {
        run(job, wakingAThread: true)
    }

    /// Queues `job` without waking an idle thread when `wakingAThread` is false: for a pool thread that is about to
    /// return to the pool, so that it runs the job itself (unless a busy thread gets to it first). Waking another
    /// thread for work that follows the current job costs a context switch on each side and a core's wake-up;
    /// a WAL sync after its commit is such work. Only a pool thread may pass false (otherwise it wakes anyway).
    func run(_ job: @escaping @Sendable () -> Void, wakingAThread: Bool) {
        let wake = wakingAThread || !isCurrentThreadInPool
        enum Start { case none, wakeIdle, newThread }
        let start = state.withLock { state -> Start in
            state.jobs.append(job)
            if state.isStopping && state.liveThreads == 0 {
                // Every thread has left: this job (the close of a store released after the daemon stopped, whose
                // deinit waits for it) would never run. A thread runs it, and whatever follows it, then leaves.
                state.liveThreads = 1
                return .newThread
            }
            guard wake, state.idleThreads > 0 else { return .none }
            state.idleThreads -= 1
            return .wakeIdle
        }
        switch start {
        case .none: break
        case .wakeIdle: wakeup.signal()
        case .newThread: startThread()
        }
    }

    /// How many of the pool's threads have not left (tests).
    var liveThreadCount: Int { state.withLock { $0.liveThreads } }

    /// Whether the calling thread is one of this pool's.
    public var isCurrentThreadInPool: Bool {
        let current = UInt(pthread_self())
        return members.withLock { $0.contains(current) }
    }

    /// Lets the threads finish the queued jobs and exit (a stopping daemon, after its stores are closed).
    /// Jobs queued later still run: on the last thread to leave, or once all have left, on a thread started for
    /// them.
    public func shutdown() {
        let waiting = state.withLock { state in
            state.isStopping = true
            defer { state.idleThreads = 0 }
            return state.idleThreads
        }
        for _ in 0..<waiting { wakeup.signal() }
    }

    /// Runs `body` once on a thread of its own named `name`, with `niceness` added to its nice value: one-off CPU work
    /// that must yield the cores to the event loop, as the compute pool does. (A dispatch queue's worker cannot be
    /// reniced back to 0 without privileges once it is done, so it is not used for this.)
    public static func runDetached(name: String, niceness: Int32, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            if niceness != 0 { renice(by: niceness) }
            body()
        }
        thread.name = name
        thread.start()
    }

    /// Raises the calling thread's nice value (its kernel thread ID read from /proc/thread-self, as Glibc's
    /// `gettid` is not visible to Swift here).
    private static func renice(by niceness: Int32) {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard count > 0 else { return }
        let link = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let tid = link.split(separator: "/").last.flatMap({ id_t($0) }) else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), tid, niceness)
    }

    private static let taken: @Sendable () -> Void = {}

    private func work() {
        while true {
            let job: (@Sendable () -> Void)?? = state.withLock { state in
                if state.head < state.jobs.count {
                    let job = state.jobs[state.head]
                    // A job taken must not stay referenced (with what it captured: a request body to parse, a
                    // publish's trees) until the queue is next compacted.
                    state.jobs[state.head] = StorePool.taken
                    state.head += 1
                    if state.head >= 64 && state.head * 2 >= state.jobs.count {
                        state.jobs.removeFirst(state.head)
                        state.head = 0
                    }
                    return .some(job)
                }
                if state.isStopping {
                    state.liveThreads -= 1
                    return .some(nil)
                }
                state.idleThreads += 1
                return nil
            }
            switch job {
            case .some(.some(let job)): job()
            case .some(.none):
                let current = UInt(pthread_self())
                members.withLock { _ = $0.remove(current) }
                return
            case .none: wakeup.wait()
            }
        }
    }
}

/// One serial queue on a `StorePool`: items are consumed in order, by one thread at a time.
///
/// `consume` gets every item queued since its last run, in order. After `close(then:)`, new items are refused,
/// and once the queued ones are consumed `then` runs (on a pool thread), once.
final class StoreLane<Item: Sendable>: Sendable {
    private struct State {
        var pending: [Item] = []
        /// The lane is on the pool's run queue or running.
        var isScheduled = false
        var isClosing = false
        var onDrained: (@Sendable () -> Void)?
        /// The thread running the lane now (0 when none).
        var runningThread: UInt = 0
    }

    private let state = Mutex(State())
    private let pool: StorePool
    private let consume: @Sendable ([Item]) -> Void

    init(pool: StorePool, consume: @escaping @Sendable ([Item]) -> Void) {
        self.pool = pool
        self.consume = consume
    }

    /// Queues an item; the lane runs soon.
    ///
    /// - Parameter wakingAThread: false from a pool thread about to return to the pool, which then runs the lane
    ///   itself (see `StorePool.run(_:wakingAThread:)`).
    /// - Returns: `false` when the lane is closing (the item was not queued).
    func enqueue(_ item: Item, wakingAThread: Bool = true) -> Bool {
        let schedule: Bool? = state.withLock { state in
            guard !state.isClosing else { return nil }
            state.pending.append(item)
            defer { state.isScheduled = true }
            return !state.isScheduled
        }
        guard let schedule else { return false }
        if schedule { pool.run({ [self] in run() }, wakingAThread: wakingAThread) }
        return true
    }

    /// Refuses new items and runs `then` once every queued item was consumed.
    ///
    /// - Returns: `true` for the first call (later calls do nothing).
    @discardableResult
    func close(then: @escaping @Sendable () -> Void) -> Bool {
        let schedule: Bool? = state.withLock { state in
            guard !state.isClosing else { return nil }
            state.isClosing = true
            state.onDrained = then
            defer { state.isScheduled = true }
            return !state.isScheduled
        }
        guard let schedule else { return false }
        if schedule { pool.run { [self] in run() } }
        return true
    }

    /// Whether the calling thread is running this lane now (a completion called from it).
    var isRunningOnCurrentThread: Bool {
        let current = UInt(pthread_self())
        return state.withLock { $0.runningThread == current }
    }

    private enum Next {
        case reschedule, drained(@Sendable () -> Void), idle
    }

    private func run() {
        var taken: [Item] = []
        state.withLock { state in
            state.runningThread = UInt(pthread_self())
            swap(&taken, &state.pending)
        }
        if !taken.isEmpty { consume(taken) }
        taken = []  // released outside the lock
        let next: Next = state.withLock { state in
            state.runningThread = 0
            if !state.pending.isEmpty { return .reschedule }
            state.isScheduled = false
            if state.isClosing, let drained = state.onDrained {
                state.onDrained = nil
                return .drained(drained)
            }
            return .idle
        }
        switch next {
        case .reschedule: pool.run { [self] in run() }
        case .drained(let drained): drained()
        case .idle: break
        }
    }
}
