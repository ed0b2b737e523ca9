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
                core.queue.async { [core, id] in continuation.resume(returning: core.status(of: id)) }
            }
        }
    }

    /// Returns once the server acknowledged the write.
    /// - Throws: `ClientError` when it was rejected (it has been rolled back) or the database was closed first.
    public func synced() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            core.queue.async { [core, id] in core.waitForWrite(id, continuation) }
        }
    }
}
