// StoreWriter -- the client's SQLite file behind its own serial queue, so no caller and no sync turn waits on it.
//
// `ClientStore` is a single connection opened in SQLite's multi-thread mode ("a single database connection
// must not be used simultaneously in two or more threads"), so it is confined to `queue` after `init`: every
// read and write of the file runs there, in the order it was submitted. The sync queue submits and moves on;
// what must happen after a row is committed (a write goes out on the wire only once it is in the file) is
// called back on the sync queue (`then`). Failures are logged and reported to `then` as `false`, never thrown
// at the submitter: the in-memory state stays authoritative for this run, as it was before the move. A file
// locked by another process is waited for longer than before (`busyRetries` busy timeouts), since nobody but
// this queue waits: a write's row is kept through a long backup or checkpoint instead of being dropped.
//
// One queue per file in the process (GRDB's rule, "connect to any database file only once", applied to the
// queue): every client of one cache file — two `Database`s of one namespace, or one closed and reopened —
// runs its SQLite work on the same queue, so a client opened on a file reads every row an earlier client of
// this process has submitted, committed or not yet, and two clients never wait on each other's locks.

import CanopyCore
import Dispatch
import Foundation
import Synchronization

/// The client's store, confined to one serial queue.
final class StoreWriter: @unchecked Sendable {
    // Invariant: `store` is used only on `queue` (it is even opened there).
    let queue: DispatchQueue
    private let store: ClientStore
    private let logger: Logger

    /// Opens (creating and migrating as needed) the store at `path` on the file's queue.
    init(path: String, logger: Logger) throws(ClientError) {
        queue = Self.queue(forFile: path)
        let opened: Result<ClientStore, ClientError> = queue.sync {
            do throws(ClientError) { return .success(try ClientStore(path: path)) } catch {
                return .failure(error)
            }
        }
        store = try opened.get()
        self.logger = logger
    }

    /// How many busy timeouts (2 s each, see `ClientStore`) an operation waits out before it fails.
    static let busyRetries = 15

    /// The queues of the files open in this process, by absolute path (an entry lives while a writer uses it).
    private static let queues = Mutex<[String: WeakQueue]>([:])

    private final class WeakQueue: Sendable {
        nonisolated(unsafe) weak var queue: DispatchQueue?  // written once, under `queues`' lock
        init(_ queue: DispatchQueue) { self.queue = queue }
    }

    static func queue(forFile path: String) -> DispatchQueue {
        let key = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        return queues.withLock { queues in
            if let queue = queues[key]?.queue { return queue }
            queues = queues.filter { $0.value.queue != nil }
            let queue = DispatchQueue(label: "canopy.client.store")
            queues[key] = WeakQueue(queue)
            return queue
        }
    }

    /// Reads the cached values and the write queue. Called once, while the client is being created.
    func load() throws(ClientError) -> (cache: [CachedValue], writes: [StoredWrite]) {
        let result: Result<([CachedValue], [StoredWrite]), ClientError> = queue.sync {
            do throws(ClientError) {
                return .success((try store.loadCache(), try store.loadWrites()))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Appends a write to the persisted queue.
    func append(_ write: StoredWrite, then done: (@Sendable (Bool) -> Void)? = nil) {
        submit("client.queue_write_failed", done) { store throws(ClientError) in
            try store.appendWrite(write)
        }
    }

    /// Marks a persisted write as sent (see SyncCore+Writes).
    func markSent(_ id: Int64, then done: (@Sendable (Bool) -> Void)? = nil) {
        submit("client.queue_mark_failed", done) { store throws(ClientError) in try store.markSent(id) }
    }

    /// Removes a write from the persisted queue (acknowledged, rejected or dropped).
    func remove(_ id: Int64) {
        submit("client.queue_remove_failed", nil) { store throws(ClientError) in
            try store.removeWrite(id)
        }
    }

    /// Replaces cached server values in one transaction.
    func saveCache(_ rows: [CachedValue]) {
        guard !rows.isEmpty else { return }
        submit("client.cache_write_failed", nil) { store throws(ClientError) in
            try store.saveCache(rows)
        }
    }

    /// Runs `body` once everything submitted so far is done (in the file or failed).
    func barrier(_ body: @escaping @Sendable () -> Void) { queue.async(execute: body) }

    /// Closes the file after everything submitted so far.
    func close() { queue.async { [self] in store.close() } }

    private func submit(
        _ event: String, _ done: (@Sendable (Bool) -> Void)?,
        _ body: @escaping @Sendable (ClientStore) throws(ClientError) -> Void
    ) {
        queue.async { [self] in
            var ok = false
            for attempt in 1...Self.busyRetries {
                do throws(ClientError) {
                    try body(store)
                    ok = true
                    break
                } catch {
                    guard store.lastFailureWasBusy, attempt < Self.busyRetries else {
                        logger.error(event, ["reason": error.userMessage])
                        break
                    }
                }
            }
            done?(ok)
        }
    }
}
