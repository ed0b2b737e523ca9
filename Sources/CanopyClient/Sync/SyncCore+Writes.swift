// SyncCore+Writes -- local writes: apply at once, persist in the FIFO queue, send in order, ack or roll back.
//
// Resend rule (a write is never applied twice): after a reconnect every unacknowledged write is sent again, in
// order. A put or merge of plain values (push ids included: they are made by the client) is idempotent, so a
// second copy of a write the server already applied changes nothing. A write containing a server increment
// (`{".sv":{"increment":n}}`) is not: if it was sent on a connection that then dropped before the ack, it is
// NOT resent — it completes as rejected with `ClientError.disconnected` (the server may or may not have applied
// it; the listens show which), exactly as Firebase does for in-flight transactions. The `sent` mark is persisted
// before the write goes out, so the rule also holds across an app restart.
//
// Persistence (the store writer's queue, never the caller's thread): `write` applies the write in memory and
// submits its row; the call returns without waiting for SQLite. Rows are committed in call order, and the wire
// never carries a write before its row is in the file: every frame sent after a row was submitted waits in the
// request queue until that row is committed (and an increment's `sent` mark likewise before it goes out), so frames
// keep their order and anything the server may have seen is in the file. `PendingWrite.saved()` returns once
// the row is committed and `Database.close()` waits for every row; a process killed between the call and the
// commit (typically well under a millisecond) loses that write, which never reached the server either.

import CanopyCore

extension SyncCore {
    /// A new local write: resolved, validated, layered, persisted, sent. Queue only.
    func write(at path: Path, wire: JSONValue, merge: Bool) -> Int64 {
        let id = writes.makeID()
        guard !isClosed else {
            writes.finish(id, .rejected(ClientError.closed.userMessage), error: .closed)
            return id
        }
        let change: UserWrite.Change
        do {
            change = try resolve(wire, at: path, merge: merge)
        } catch {
            let failure = ClientError.invalidData(path: path.description, reason: error.userMessage)
            writes.finish(id, .rejected(failure.userMessage), error: failure)
            return id
        }
        let write = UserWrite(id: id, path: path, change: change, wire: wire)
        if let storeWriter {
            let row = StoredWrite(id: id, path: path.description, action: write.action, data: wire.serialized(), sent: false)
            submitGating { done in storeWriter.append(row, then: done) }
        }
        writes.append(write)
        refresh(affecting: path)
        publishPendingCount()
        if connection.isConnected { sendWrite(write) }
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
        return Node.empty.setting(writes.tree.overlay(cache.serverTree.node(at: path), at: path), at: path)
    }

    /// Sends one queued write. Queue only, connected.
    func sendWrite(_ write: UserWrite) {
        if write.containsIncrement && !write.sent, let storeWriter {
            submitGating { done in storeWriter.markSent(write.id, then: done) }
        }
        writes.markSent(write.id)
        let body: JSONValue = [Wire.Key.path: .string(write.path.description), Wire.Key.data: write.wire]
        send(write.action, body) { [weak self] outcome in
            self?.writeAnswered(write.id, outcome)
        }
    }

    /// Resends every pending write after a reconnect, oldest first, except in-flight increments (see header).
    func resendWrites() {
        for write in writes.tree.writes where !write.isTransaction {
            if write.sent && write.containsIncrement {
                complete(write.id, error: .disconnected(path: write.path.description))
            } else {
                sendWrite(write)
            }
        }
    }

    private func writeAnswered(_ id: Int64, _ outcome: RequestOutcome) {
        guard case .reply(let status, let data) = outcome else { return }  // resent after the reconnect
        if status == Wire.Status.ok {
            complete(id, error: nil)
        } else {
            guard let path = writes.write(id)?.path else { return }
            complete(id, error: .from(status: status, message: data.stringValue ?? status, path: path))
        }
    }

    /// Removes a pending write (acknowledged, or rejected and so rolled back) and reports it.
    func complete(_ id: Int64, error: ClientError?) {
        guard let write = writes.remove(id) else { return }
        if !write.isTransaction { storeWriter?.remove(id) }
        if let error {
            logger.info("client.write_rejected", ["path": write.path.description, "code": error.code])
        }
        refresh(affecting: write.path)
        publishPendingCount()
        writes.finish(id, error.map { .rejected($0.userMessage) } ?? .synced, error: error)
    }

    /// Resumes `continuation` once every row submitted so far is in the file (at once without a file).
    func whenSaved(_ continuation: CheckedContinuation<Void, Never>) {
        guard let storeWriter else { return continuation.resume() }
        storeWriter.barrier { continuation.resume() }
    }
}
