// SyncCore+Listens -- listens, server pushes, and computing each observer's visible value (events).

import CanopyCore

extension SyncCore {
    /// The prefix of local-only locations (`.info/connected`, `.info/serverTimeOffset`).
    static let infoKey = ".info"

    // MARK: - observers

    /// Registers a stream; delivers the current value at once when it is known. Queue only.
    func addObserver(
        path: Path, spec: QuerySpec, continuation: AsyncThrowingStream<DataSnapshot, any Error>.Continuation
    ) -> Int {
        guard !isClosed else {
            continuation.finish(throwing: ClientError.closed)
            return listens.skipObserverID()
        }
        let isInfo = path.firstKey == Self.infoKey
        let key = isInfo ? nil : ListenKey(path: path, query: spec.loadsAllData ? nil : spec)
        let id = listens.addObserver(Observer(path: path, spec: spec, key: key, continuation: continuation))
        if let key { retain(key) }
        deliver(id)
        return id
    }

    /// Ends a stream (the consumer stopped). Queue only.
    func removeObserver(_ id: Int) {
        guard let observer = listens.removeObserver(id), let key = observer.key else { return }
        release(key)
    }

    /// Adds one user of a listen, sending `q` for a new one.
    func retain(_ key: ListenKey) {
        if listens.retain(key) && connection.isConnected { sendListen(key) }
    }

    /// Drops one user of a listen, sending `n` when it was the last.
    func release(_ key: ListenKey) {
        guard let state = listens.release(key) else { return }
        if connection.isConnected {
            var body: [JSONMember] = [JSONMember(Wire.Key.path, .string(key.path.description))]
            if let query = key.query, let tag = state.tag {
                body.append(JSONMember(Wire.Key.query, query.wireObject()))
                body.append(JSONMember(Wire.Key.tag, .int(tag)))
            }
            send(Wire.Action.unlisten, .object(body)) { _ in }
        }
    }

    /// Sends `q` with the hash of the server data we hold for it (so an unchanged location is not resent).
    func sendListen(_ key: ListenKey) {
        guard let state = listens[key] else { return }
        var body: [JSONMember] = [JSONMember(Wire.Key.path, .string(key.path.description))]
        body.append(JSONMember(Wire.Key.hash, .string(cache.isKnown(key) ? listenHash(key) : "")))
        if let query = key.query, let tag = state.tag {
            body.append(JSONMember(Wire.Key.query, query.wireObject()))
            body.append(JSONMember(Wire.Key.tag, .int(tag)))
        }
        send(Wire.Action.listen, .object(body)) { [weak self] outcome in
            guard let self, case .reply(let status, let data) = outcome, self.listens[key]?.serial == state.serial else {
                return
            }
            if status == Wire.Status.ok {
                _ = self.listens.confirm(key, serial: state.serial)
                self.cache.markKnown(key)
                self.markDirty(key)
                self.refresh(affecting: key.path)
                self.resumeCompletionWaiters(key, error: nil)
            } else {
                let message = data.stringValue ?? status
                self.cancelListen(key, error: ClientError.from(status: status, message: message, path: key.path))
            }
        }
    }

    /// Ends every stream of a listen with `error` (a refused or revoked listen).
    func cancelListen(_ key: ListenKey, error: ClientError) {
        guard listens.remove(key) != nil else { return }
        for observer in listens.removeObservers(of: key) { observer.continuation.finish(throwing: error) }
        resumeCompletionWaiters(key, error: error)
    }

    // MARK: - server pushes

    func handlePush(_ action: String, _ body: JSONValue) {
        switch action {
        case Wire.Push.data, Wire.Push.merge:
            guard let text = body[Wire.Key.path]?.stringValue, let path = try? Path(parsing: text) else { return }
            let tag = body[Wire.Key.tag]?.int64Value
            var updates: [(Path, Node)] = []
            do {
                if action == Wire.Push.data {
                    updates.append((path, try Node.from(json: body[Wire.Key.data] ?? .null, at: path)))
                } else {
                    for member in body[Wire.Key.data]?.members ?? [] {
                        let target = path.appending(try Path(parsing: member.key))
                        updates.append((target, try Node.from(json: member.value, at: target)))
                    }
                }
            } catch {
                // Never let unusable data erase what we hold: drop the whole push.
                logger.warning("client.bad_push", ["path": path.description, "reason": error.userMessage])
                return
            }
            applyServer(updates, tag: tag)
        case Wire.Push.listenRevoked:
            guard let text = body[Wire.Key.path]?.stringValue, let path = try? Path(parsing: text) else { return }
            let query = body[Wire.Key.query]?[0].flatMap { try? QuerySpec.fromWire($0) }
            for key in listens.keys where key.path == path && (query == nil || key.query == query) {
                cancelListen(key, error: .permissionDenied(path: path.description))
            }
        case Wire.Push.authRevoked:
            logger.info("client.auth_revoked", ["status": body[Wire.Key.status]?.stringValue ?? ""])
            drive { machine, _ in machine.authRevoked() }
        default:
            return
        }
    }

    /// Applies server data: untagged into the server tree, tagged into that query's window.
    private func applyServer(_ updates: [(Path, Node)], tag: Int64?) {
        if let tag {
            guard let key = listens.key(forTag: tag) else { return }  // a push racing an unlisten
            cache.setWindow(key, updates)
            markDirty(key)
            refresh(affecting: key.path)
            return
        }
        for (path, node) in updates {
            cache.setServer(node, at: path)
            for key in listens.keys
            where key.query == nil && (key.path.isAncestorOrSelf(of: path) || path.isAncestorOrSelf(of: key.path)) {
                markDirty(key)
            }
            refresh(affecting: path)
        }
    }

    // MARK: - views and events

    /// The server's value for a listen (possibly stale or empty); see `LocalCache.serverView`.
    func serverView(_ key: ListenKey) -> Node {
        cache.serverView(key, covered: key.query != nil && coveredByDefaultListen(key.path))
    }

    /// Whether a default listen at or above `path` is active and its data is held.
    func coveredByDefaultListen(_ path: Path) -> Bool {
        listens.hasDefaultListen(atOrAbove: path) && cache.isKnown(ListenKey(path: path, query: nil))
    }

    /// The hash the server compares with a listen's current result: of the window, for a query.
    func listenHash(_ key: ListenKey) -> String {
        guard let query = key.query else { return serverView(key).hash }
        return query.window(of: serverView(key)).hash
    }

    /// The value an observer should see now, or nil when nothing is known yet.
    private func visible(_ observer: Observer) -> (node: Node, fromCache: Bool)? {
        guard let key = observer.key else {
            let infoNode = (try? Node.from(json: .object(info.sorted { $0.key < $1.key }.map { JSONMember($0.key, $0.value) })))
                ?? .empty
            return (infoNode.node(at: observer.path.droppingFirst), false)
        }
        let complete = listens.isComplete(key)
        guard complete || cache.isKnown(key) || writes.tree.determines(key.path) else { return nil }
        let local = writes.tree.overlay(serverView(key), at: key.path)
        let node = observer.spec.loadsAllData ? local : observer.spec.window(of: local)
        return (node, !complete)
    }

    /// Sends the observer its visible value if it changed since the last event.
    func deliver(_ id: Int) {
        guard let observer = listens.observers[id], let (node, fromCache) = visible(observer) else { return }
        if let last = observer.last, last == node { return }
        listens.delivered(node, to: id)
        observer.continuation.yield(
            DataSnapshot(path: observer.path, node: node, spec: observer.spec, fromCache: fromCache))
    }

    /// Schedules re-evaluation of every observer whose location overlaps `path`.
    ///
    /// Changes are gathered and evaluated once per queue turn: a burst of pushes and acks already waiting on
    /// the queue costs one evaluation per observer, not one per message (order is kept; a value that existed
    /// only between two messages of the burst is not delivered).
    func refresh(affecting path: Path) {
        changedPaths.insert(path)
        guard !isRefreshScheduled else { return }
        isRefreshScheduled = true
        queue.async { [weak self] in self?.flushRefresh() }
    }

    private func flushRefresh() {
        isRefreshScheduled = false
        let paths = changedPaths
        changedPaths = []
        for (id, observer) in listens.observers.sorted(by: { $0.key < $1.key })
        where paths.contains(where: { observer.path.isAncestorOrSelf(of: $0) || $0.isAncestorOrSelf(of: observer.path) }) {
            deliver(id)
        }
    }

    func setInfo(connected: Bool) {
        info["connected"] = .bool(connected)
        refresh(affecting: Path(segments: [Self.infoKey]))
    }

    // MARK: - waiting for data

    /// Resumes `continuation` when `key`'s data is good to run on: confirmed by the server, or — while there is
    /// no connection to confirm it — held from the cache. The caller retains the listen meanwhile.
    func whenKnown(_ key: ListenKey, _ continuation: CheckedContinuation<Void, any Error>) {
        if listens.isComplete(key) || (!connection.isConnected && cache.isKnown(key)) {
            continuation.resume()
            return
        }
        listens.addWaiter(key, continuation)
    }

    /// Resumes the waiters whose data is held, once the connection is gone (see `whenKnown`).
    func resumeWaitersOnHeldData() {
        for key in listens.waitedKeys where cache.isKnown(key) { listens.resumeWaiters(key, error: nil) }
    }

    func resumeCompletionWaiters(_ key: ListenKey, error: ClientError?) { listens.resumeWaiters(key, error: error) }
}
