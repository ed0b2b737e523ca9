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
        let completion: @Sendable (Result<UInt64, StoreError>) -> Void
    }

    private struct State {
        var pending: [Submission] = []
        /// The next submission to hand out is `pending[head]` (a consumed prefix is dropped lazily).
        var head = 0
        /// The writer found nothing to do and is (about to be) waiting on `wakeup`.
        var isWriterWaiting = false
        /// `close()` was called: no more submissions are accepted.
        var isClosing = false
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    /// The revision of the last committed submission (read by any thread, written by the writer).
    let revision = Atomic<UInt64>(0)
    /// Transactions committed so far (statistics and tests).
    let transactionCount = Atomic<UInt64>(0)

    /// Queues a submission and wakes the writer if it sleeps.
    ///
    /// - Returns: `false` when the queue is closing (the submission was not queued).
    func enqueue(_ submission: Submission) -> Bool {
        let shouldWake: Bool? = state.withLock { state in
            guard !state.isClosing else { return nil }
            state.pending.append(submission)
            defer { state.isWriterWaiting = false }
            return state.isWriterWaiting
        }
        guard let shouldWake else { return false }
        if shouldWake { wakeup.signal() }
        return true
    }

    /// Stops accepting submissions and wakes the writer so it can drain and exit.
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

    /// The next group for one transaction, waiting for submissions when there are none.
    ///
    /// Takes every pending submission (group commit), stopping once `mutationLimit` mutations are
    /// taken; always takes at least one.
    /// - Returns: `nil` when the queue is closing and empty: the writer should exit.
    func nextGroup(mutationLimit: Int) -> [Submission]? {
        while true {
            let group: [Submission]? = state.withLock { state in
                guard state.head < state.pending.count else {
                    state.pending.removeAll(keepingCapacity: state.pending.count < 4096)
                    state.head = 0
                    if state.isClosing { return nil }
                    state.isWriterWaiting = true
                    return []
                }
                var end = state.head
                var mutations = 0
                while end < state.pending.count,
                    end == state.head || mutations + state.pending[end].mutations.count <= mutationLimit
                {
                    mutations += state.pending[end].mutations.count
                    end += 1
                }
                let group = Array(state.pending[state.head..<end])
                state.head = end
                if state.head >= 1024, state.head * 2 >= state.pending.count {
                    // Under a sustained flood the queue never empties; drop the consumed prefix in O(n) amortised.
                    state.pending.removeFirst(state.head)
                    state.head = 0
                }
                return group
            }
            guard let group else { return nil }
            if !group.isEmpty { return group }
            wakeup.wait()
        }
    }
}
