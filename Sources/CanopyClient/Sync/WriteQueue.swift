// WriteQueue -- the pending writes: ids, the layered WriteTree, final statuses and who waits for them.
//
// A pure value. A write gets an id when the application makes it (ids increase in call order), is pending
// in `tree` until the server answers, then finishes with a status that is kept for the last 10,000 writes so a
// late `status` or `synced()` still gets the answer. The store rows and the wire are the coordinator's job.

import CanopyCore

/// The client's pending writes and recent outcomes.
struct WriteQueue: Sendable {
    private(set) var tree = WriteTree()
    private var nextID: Int64 = 1
    private var finished: [Int64: (status: WriteStatus, error: ClientError?)] = [:]
    private var finishedOrder: [Int64] = []
    private var waiters: [Int64: [CheckedContinuation<Void, any Error>]] = [:]
    /// How many final statuses are kept.
    static let finishedLimit = 10_000

    /// The number of pending application writes (transactions excluded).
    var userWriteCount: Int { tree.userWriteCount }

    /// A new write id.
    mutating func makeID() -> Int64 {
        defer { nextID += 1 }
        return nextID
    }

    /// A write restored from the file: later ids follow it.
    mutating func restore(_ write: UserWrite) {
        nextID = max(nextID, write.id + 1)
        tree.append(write)
    }

    /// Notes an id used by a row that was not restored, so it is never reused.
    mutating func skip(_ id: Int64) { nextID = max(nextID, id + 1) }

    mutating func append(_ write: UserWrite) { tree.append(write) }

    mutating func markSent(_ id: Int64) { tree.markSent(id) }

    /// Removes and returns a pending write (acknowledged or rejected).
    mutating func remove(_ id: Int64) -> UserWrite? { tree.remove(id) }

    func write(_ id: Int64) -> UserWrite? { tree.write(id) }

    // MARK: - outcomes

    /// Records a final status and wakes the write's waiters.
    mutating func finish(_ id: Int64, _ status: WriteStatus, error: ClientError?) {
        finished[id] = (status, error)
        finishedOrder.append(id)
        if finishedOrder.count > Self.finishedLimit {
            for old in finishedOrder.prefix(1_000) { finished[old] = nil }
            finishedOrder.removeFirst(1_000)
        }
        for waiter in waiters.removeValue(forKey: id) ?? [] {
            if let error { waiter.resume(throwing: error) } else { waiter.resume() }
        }
    }

    func status(of id: Int64) -> WriteStatus {
        if tree.write(id) != nil { return .pending }
        return finished[id]?.status ?? .synced
    }

    /// Resumes `continuation` when the write is acknowledged (throws its error when rejected).
    mutating func wait(for id: Int64, _ continuation: CheckedContinuation<Void, any Error>) {
        if tree.write(id) != nil {
            waiters[id, default: []].append(continuation)
            return
        }
        if let error = finished[id]?.error {
            continuation.resume(throwing: error)
        } else {
            continuation.resume()
        }
    }

    /// Fails every waiter with `error` (the client closed; the writes stay in the file).
    mutating func failAllWaiters(_ error: ClientError) {
        for (_, list) in waiters {
            for waiter in list { waiter.resume(throwing: error) }
        }
        waiters = [:]
    }
}
