// SubmissionQueue -- the hand-off between threads that submit writes and a store's writer thread.
import Dispatch
import Synchronization

/// Submissions waiting for the writer thread, plus the state both sides share.
///
/// Every field is either immutable, a `Mutex`, an `Atomic` or a semaphore, so the class is `Sendable`.
/// The writer thread holds this object, never the `NamespaceStore`, so dropping the store can close it.
final class SubmissionQueue: Sendable {
    /// One call to `submit`.
    struct Submission: Sendable {
        let mutations: [StoreMutation]
        let visible: (@Sendable () -> Void)?
        let completion: @Sendable (Result<UInt64, StoreError>) -> Void
    }

    private let items = HandoffQueue<Submission>()
    /// The revision of the last committed submission (read by any thread, written by the writer).
    let revision = Atomic<UInt64>(0)
    /// The writer thread's `pthread_t` (0 until it starts), to recognise calls made from a completion.
    let writerThreadID = Atomic<UInt>(0)
    /// The WAL syncer thread's `pthread_t` (0 when there is none), where completions run with `.full`.
    let syncerThreadID = Atomic<UInt>(0)
    /// Transactions committed so far (statistics and tests).
    let transactionCount = Atomic<UInt64>(0)

    /// Queues a submission and wakes the writer if it sleeps.
    ///
    /// - Returns: `false` when the queue is closing (the submission was not queued).
    func enqueue(_ submission: Submission) -> Bool { items.enqueue(submission) }

    /// Stops accepting submissions and wakes the writer so it can drain and exit.
    ///
    /// - Returns: `true` for the first call.
    func close() -> Bool { items.close() }

    /// Every pending submission, in submission order, waiting for one when there are none; `nil` when the queue
    /// is closing and empty: the writer should exit.
    func takeAll() -> [Submission]? { items.takeAll() }
}

/// Items handed from any number of threads to one consumer thread, which takes them all at once.
///
/// The consumer sleeps on a semaphore only after finding nothing to do, and a producer signals only when it
/// finds the consumer asleep (or about to sleep), so a busy hand-off costs a lock, no system call.
final class HandoffQueue<Item: Sendable>: Sendable {
    private struct State {
        var pending: [Item] = []
        /// The consumer found nothing to do and is (about to be) waiting on `wakeup`.
        var isConsumerWaiting = false
        /// `close()` was called: no more items are accepted.
        var isClosing = false
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)

    /// Queues an item and wakes the consumer if it sleeps.
    ///
    /// - Returns: `false` when the queue is closing (the item was not queued).
    func enqueue(_ item: Item) -> Bool {
        let shouldWake: Bool? = state.withLock { state in
            guard !state.isClosing else { return nil }
            state.pending.append(item)
            defer { state.isConsumerWaiting = false }
            return state.isConsumerWaiting
        }
        guard let shouldWake else { return false }
        if shouldWake { wakeup.signal() }
        return true
    }

    /// Stops accepting items and wakes the consumer so it can drain and exit.
    ///
    /// - Returns: `true` for the first call.
    func close() -> Bool {
        let isFirst = state.withLock { state in
            defer { state.isClosing = true }
            return !state.isClosing
        }
        if isFirst { wakeup.signal() }
        return isFirst
    }

    /// Every pending item, in order, waiting for one when there are none.
    ///
    /// The array is swapped out whole, so releasing items (and whatever they capture) never happens under the
    /// lock.
    /// - Returns: `nil` when the queue is closing and empty: the consumer should exit.
    func takeAll() -> [Item]? {
        while true {
            let taken: [Item]? = state.withLock { state in
                guard state.pending.isEmpty else {
                    var taken: [Item] = []
                    swap(&taken, &state.pending)
                    return taken
                }
                if state.isClosing { return nil }
                state.isConsumerWaiting = true
                return []
            }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
            wakeup.wait()
        }
    }
}
