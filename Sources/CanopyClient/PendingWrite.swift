// PendingWrite -- a handle on one local write: its sync status and a way to await the server's answer.

/// The sync status of a local write.
public enum WriteStatus: Sendable, Equatable {
    /// Applied locally, queued or in flight.
    case pending
    /// Acknowledged by the server.
    case synced
    /// Refused (rules, invalid data, or an increment lost in flight) and rolled back locally; the reason.
    case rejected(String)
}

/// A local write, identified by its queue id.
public struct PendingWrite: Sendable {
    /// The write's id in the queue (increasing in write order).
    public let id: Int64
    let database: Database
    var core: SyncCore { database.core }

    /// The current status.
    public var status: WriteStatus {
        get async {
            await withCheckedContinuation { continuation in
                core.queue.async { [core, id] in continuation.resume(returning: core.writes.status(of: id)) }
            }
        }
    }

    /// Returns once the server acknowledged the write.
    /// - Throws: `ClientError` when it was rejected (it has been rolled back) or the database was closed first.
    public func synced() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            core.queue.async { [core, id] in core.writes.wait(for: id, continuation) }
        }
    }

    /// Returns once the write is in the cache file, so it survives the app being killed and restarted (at once
    /// for a database without `cacheDirectory`, and for a write that was refused before being queued).
    ///
    /// `setValue` and the other write calls return before the row is committed: they never wait for SQLite on
    /// the caller's thread. Rows are committed in call order, shortly after the call, always before the write is
    /// sent to the server, and `Database.close()` waits for all of them.
    public func saved() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.queue.async { [core] in core.whenSaved(continuation) }
        }
    }
}
