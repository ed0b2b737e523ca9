// SyncCore+Transactions -- compare-and-set transactions, onDisconnect requests, and shutting the core down.

import CanopyCore

/// How one transaction attempt ended.
enum TransactionAttempt: Sendable {
    case committed
    /// The server's value differed from the one the update ran on (`datastale`): run again.
    case stale
    case failed(ClientError)
}

extension SyncCore {
    /// The value a transaction attempt runs on: the local view (server data + earlier pending writes). Queue only.
    func transactionBase(_ path: Path) -> Node {
        writes.tree.overlay(cache.serverTree.node(at: path), at: path)
    }

    /// Sends one attempt: applies `value` optimistically and sends `p` with the hash of `base`. Queue only.
    func commitTransaction(
        at path: Path, base: Node, value: JSONValue, completion: @escaping @Sendable (TransactionAttempt) -> Void
    ) {
        guard !isClosed else {
            completion(.failed(.closed))
            return
        }
        let id = writes.makeID()
        do {
            var write = UserWrite(id: id, path: path, change: try resolve(value, at: path, merge: false), wire: value)
            write.isTransaction = true
            writes.append(write)
        } catch {
            completion(.failed(.invalidData(path: path.description, reason: error.userMessage)))
            return
        }
        refresh(affecting: path)
        request(
            Wire.Action.put,
            [Wire.Key.path: .string(path.description), Wire.Key.data: value, Wire.Key.hash: .string(base.hash)]
        ) { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .reply(Wire.Status.ok, _):
                self.complete(id, error: nil)
                completion(.committed)
            case .reply(Wire.Status.dataStale, _):
                self.complete(id, error: nil)
                completion(.stale)
            case .reply(let status, let data):
                let error = ClientError.from(status: status, message: data.stringValue ?? status, path: path)
                self.complete(id, error: error)
                completion(.failed(error))
            case .disconnected:
                let error = ClientError.disconnected(path: path.description)
                self.complete(id, error: error)
                completion(.failed(error))
            }
        }
    }

    /// Sends an onDisconnect request (`o`, `om`, `oc`), now or after the next handshake. Queue only.
    func onDisconnectRequest(
        _ action: String, at path: Path, data: JSONValue, completion: @escaping @Sendable (ClientError?) -> Void
    ) {
        guard !isClosed else {
            completion(.closed)
            return
        }
        request(action, [Wire.Key.path: .string(path.description), Wire.Key.data: data]) { outcome in
            switch outcome {
            case .reply(Wire.Status.ok, _): completion(nil)
            case .reply(let status, let data):
                completion(.from(status: status, message: data.stringValue ?? status, path: path))
            case .disconnected: completion(.disconnected(path: path.description))
            }
        }
    }

    /// Closes everything: the connection, streams, waiters, the cache file (flushed first, then closed after
    /// every row submitted before). Queue only.
    func shutdown() {
        guard !isClosed else { return }
        flushCache()
        let actions = connection.close()
        let handlers = requests.close()
        if actions.contains(.closeTransport) {
            transport?.close()
            transport = nil
        }
        for handler in handlers { handler(.disconnected) }
        for observer in listens.removeAllObservers() { observer.continuation.finish() }
        writes.failAllWaiters(.closed)
        listens.failAllWaiters(.closed)
        setConnectionState(.closed)
        for continuation in countContinuations.values { continuation.finish() }
        for continuation in stateContinuations.values { continuation.finish() }
        countContinuations = [:]
        stateContinuations = [:]
        storeWriter?.close()
    }
}
