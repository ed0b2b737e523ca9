// SyncCore+Writes -- local writes: apply at once, persist in the FIFO queue, send in order, ack or roll back.
//
// Resend rule (a write is never applied twice): after a reconnect every unacknowledged write is sent again, in
// order. A put or merge of plain values (push ids included: they are made by the client) is idempotent, so a
// second copy of a write the server already applied changes nothing. A write containing a server increment
// (`{".sv":{"increment":n}}`) is not: if it was sent on a connection that then dropped before the ack, it is
// NOT resent — it completes as rejected with `ClientError.disconnected` (the server may or may not have applied
// it; the listens show which), exactly as Firebase does for in-flight transactions. The `sent` mark is persisted
// before the write goes out, so the rule also holds across an app restart.

import CanopyCore

extension SyncCore {
    /// A new local write: resolved, validated, layered, persisted, sent. Queue only.
    func write(at path: Path, wire: JSONValue, merge: Bool) -> Int64 {
        let id = nextWriteID
        nextWriteID += 1
        guard !isClosed else {
            finish(id, .rejected(ClientError.closed.userMessage), error: .closed)
            return id
        }
        let change: UserWrite.Change
        do {
            change = try resolve(wire, at: path, merge: merge)
        } catch {
            let failure = ClientError.invalidData(path: path.description, reason: error.userMessage)
            finish(id, .rejected(failure.userMessage), error: failure)
            return id
        }
        let write = UserWrite(id: id, path: path, change: change, wire: wire)
        do {
            try store?.appendWrite(
                StoredWrite(id: id, path: path.description, action: write.action, data: wire.serialized(), sent: false))
        } catch {
            logger.error("client.queue_write_failed", ["reason": error.userMessage])
        }
        writes.append(write)
        refresh(affecting: path)
        publishPendingCount()
        if phase == .connected { sendWrite(write) }
        return id
    }

    /// The write's effect with server values estimated locally (timestamps from the server clock estimate,
    /// increments from the current local value).
    func resolve(_ wire: JSONValue, at path: Path, merge: Bool) throws(DataError) -> UserWrite.Change {
        if !merge {
            let resolved = try ServerValues.resolve(wire, at: path, in: localRoot(around: path, for: wire), now: serverNow)
            return .set(try Node.from(json: resolved, at: path))
        }
        var entries: [(path: Path, node: Node)] = []
        for member in wire.members ?? [] {
            let relative = try Path(parsing: member.key)
            let target = path.appending(relative)
            let resolved = try ServerValues.resolve(member.value, at: target, in: localRoot(around: target, for: member.value), now: serverNow)
            entries.append((relative, try Node.from(json: resolved, at: target)))
        }
        return .merge(entries)
    }

    /// A tree holding just the local value at `path` (enough for increments to read); empty when `json` has no
    /// increment, so ordinary writes do not pay for layering every pending write.
    private func localRoot(around path: Path, for json: JSONValue) -> Node {
        guard UserWrite.containsIncrement(json) else { return .empty }
        return Node.empty.setting(writes.overlay(serverTree.node(at: path), at: path), at: path)
    }

    /// Sends one queued write. Queue only, connected.
    func sendWrite(_ write: UserWrite) {
        if write.containsIncrement && !write.sent {
            do { try store?.markSent(write.id) } catch { logger.error("client.queue_mark_failed") }
        }
        writes.markSent(write.id)
        send(write.action, ["p": .string(write.path.description), "d": write.wire]) { [weak self] outcome in
            self?.writeAnswered(write.id, outcome)
        }
    }

    /// Resends every pending write after a reconnect, oldest first, except in-flight increments (see header).
    func resendWrites() {
        for write in writes.writes where !write.isTransaction {
            if write.sent && write.containsIncrement {
                complete(write.id, error: .disconnected(path: write.path.description))
            } else {
                sendWrite(write)
            }
        }
    }

    private func writeAnswered(_ id: Int64, _ outcome: RequestOutcome) {
        guard case .reply(let status, let data) = outcome else { return }  // resent after the reconnect
        if status == "ok" {
            complete(id, error: nil)
        } else {
            guard let path = writes.write(id)?.path else { return }
            complete(id, error: .from(status: status, message: data.stringValue ?? status, path: path))
        }
    }

    /// Removes a pending write (acknowledged, or rejected and so rolled back) and reports it.
    func complete(_ id: Int64, error: ClientError?) {
        guard let write = writes.remove(id) else { return }
        if !write.isTransaction {
            do { try store?.removeWrite(id) } catch { logger.error("client.queue_remove_failed") }
        }
        if let error {
            logger.info("client.write_rejected", ["path": write.path.description, "code": error.code])
        }
        refresh(affecting: write.path)
        publishPendingCount()
        finish(id, error.map { .rejected($0.userMessage) } ?? .synced, error: error)
    }

    /// Records a final status and wakes waiters.
    func finish(_ id: Int64, _ status: WriteStatus, error: ClientError?) {
        finished[id] = (status, error)
        finishedOrder.append(id)
        if finishedOrder.count > 10_000 {
            for old in finishedOrder.prefix(1_000) { finished[old] = nil }
            finishedOrder.removeFirst(1_000)
        }
        for waiter in writeWaiters.removeValue(forKey: id) ?? [] {
            if let error { waiter.resume(throwing: error) } else { waiter.resume() }
        }
    }

    func status(of id: Int64) -> WriteStatus {
        if writes.write(id) != nil { return .pending }
        return finished[id]?.status ?? .synced
    }

    func waitForWrite(_ id: Int64, _ continuation: CheckedContinuation<Void, any Error>) {
        if writes.write(id) != nil {
            writeWaiters[id, default: []].append(continuation)
            return
        }
        if let error = finished[id]?.error {
            continuation.resume(throwing: error)
        } else {
            continuation.resume()
        }
    }
}
