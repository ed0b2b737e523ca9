// SubmissionQueue -- the hand-off between threads that submit writes and a store's writer lane.
import Synchronization

/// What the writer lane of a store is handed, plus the counters both sides share.
///
/// Every field is immutable or an `Atomic`, so the class is `Sendable`.
final class SubmissionQueue: Sendable {
    /// One call to `submit`.
    struct Submission: Sendable {
        let mutations: [StoreMutation]
        /// Rows the writer makes after `mutations`, while it writes them (see `StoreRowSource`).
        var rows: (any StoreRowSource)? = nil
        let visible: (@Sendable () -> Void)?
        /// Whether `visible` may wait for the WAL sync (nobody is waiting to be told early; see
        /// `NamespaceStore.submit`).
        let visibleMayWait: Bool
        let completion: @Sendable (Result<UInt64, StoreError>) -> Void

        /// The rows it writes, `rows` estimated.
        var rowCount: Int { mutations.count + (rows?.estimatedRowCount ?? 0) }

        /// What the writer applies.
        var work: StoreWriter.Work { StoreWriter.Work(mutations: mutations, rows: rows) }
    }

    /// One item of the writer lane: a submission, or work that must see every submission before it committed.
    enum Item: Sendable {
        case submission(Submission)
        case afterWrites(@Sendable () -> Void)
    }

    /// The revision of the last committed submission (read by any thread, written by the writer).
    let revision = Atomic<UInt64>(0)
    /// Transactions committed so far (statistics and tests).
    let transactionCount = Atomic<UInt64>(0)
    /// Whether the writer connection is open (a deferred store opens it at its first item).
    let isOpen = Atomic<Bool>(false)
}
