// ListenRegistry -- who listens to what: listens by key with their tags and users, streams, data waiters.
//
// A pure value: it decides when a listen starts (`q`) or ends (`n`) and which listen a tagged push belongs
// to; the coordinator sends. Several streams on one location share one listen (counted in `observers`).

import CanopyCore

/// A listened location as the server knows it: a path and, for ranged/limited queries, the query.
struct ListenKey: Hashable, Sendable {
    var path: Path
    /// nil for a default listen (the whole location).
    var query: QuerySpec?
}

/// A listen's bookkeeping.
struct ListenState: Sendable, Equatable {
    /// Distinguishes this listen from an earlier one of the same key (replies to an old `q` are ignored).
    var serial = 0
    var tag: Int64?
    var observers = 0
    /// The server confirmed the data on the current connection.
    var complete = false
}

/// One stream of snapshots.
struct Observer: Sendable {
    let path: Path
    let spec: QuerySpec
    /// nil for `.info` locations (served locally).
    let key: ListenKey?
    let continuation: AsyncThrowingStream<DataSnapshot, any Error>.Continuation
    var last: Node?
}

/// The listens, streams and data waiters of one client.
struct ListenRegistry: Sendable {
    private(set) var listens: [ListenKey: ListenState] = [:]
    private var tags: [Int64: ListenKey] = [:]
    private var nextTag: Int64 = 1
    private var nextSerial = 1
    private(set) var observers: [Int: Observer] = [:]
    private var nextObserverID = 1
    /// Callers waiting for a listen's data (see `SyncCore.whenKnown`).
    private var completionWaiters: [ListenKey: [CheckedContinuation<Void, any Error>]] = [:]

    subscript(key: ListenKey) -> ListenState? { listens[key] }

    var keys: Dictionary<ListenKey, ListenState>.Keys { listens.keys }

    /// The listen a tagged push belongs to (nil: a push racing an unlisten).
    func key(forTag tag: Int64) -> ListenKey? { tags[tag] }

    // MARK: - listens

    /// Adds one user of `key`; returns true when the listen is new (the caller sends `q`).
    mutating func retain(_ key: ListenKey) -> Bool {
        if listens[key] != nil {
            listens[key]?.observers += 1
            return false
        }
        var state = ListenState(serial: nextSerial, observers: 1)
        nextSerial += 1
        if key.query != nil {
            state.tag = nextTag
            tags[nextTag] = key
            nextTag += 1
        }
        listens[key] = state
        return true
    }

    /// Drops one user of `key`; returns the listen's state when that was the last user (the caller sends `n`).
    mutating func release(_ key: ListenKey) -> ListenState? {
        guard var state = listens[key] else { return nil }
        state.observers -= 1
        listens[key] = state
        return state.observers <= 0 ? remove(key) : nil
    }

    /// Ends a listen whatever its users (refused or revoked); returns its state.
    @discardableResult
    mutating func remove(_ key: ListenKey) -> ListenState? {
        guard let state = listens.removeValue(forKey: key) else { return nil }
        if let tag = state.tag { tags[tag] = nil }
        return state
    }

    /// The server confirmed `key`'s data; false when the reply is for an earlier listen of the same key.
    mutating func confirm(_ key: ListenKey, serial: Int) -> Bool {
        guard listens[key]?.serial == serial else { return false }
        listens[key]?.complete = true
        return true
    }

    /// The connection dropped: no listen is confirmed any more.
    mutating func connectionLost() {
        for key in listens.keys { listens[key]?.complete = false }
    }

    /// Whether the server confirmed `key`'s data on this connection (directly or through a listen above).
    func isComplete(_ key: ListenKey) -> Bool {
        if listens[key]?.complete == true { return true }
        return listens.contains {
            $0.key.query == nil && $0.value.complete && $0.key.path.isAncestorOrSelf(of: key.path)
        }
    }

    /// Whether a default listen at or above `path` is active.
    func hasDefaultListen(atOrAbove path: Path) -> Bool {
        listens.keys.contains { $0.query == nil && $0.path.isAncestorOrSelf(of: path) }
    }

    // MARK: - streams

    /// Registers a stream and returns its id.
    mutating func addObserver(_ observer: Observer) -> Int {
        let id = nextObserverID
        nextObserverID += 1
        observers[id] = observer
        return id
    }

    /// A new id for a stream that is not registered (the client is closed).
    mutating func skipObserverID() -> Int {
        defer { nextObserverID += 1 }
        return nextObserverID
    }

    mutating func removeObserver(_ id: Int) -> Observer? { observers.removeValue(forKey: id) }

    /// Records the value last delivered to a stream.
    mutating func delivered(_ node: Node, to id: Int) { observers[id]?.last = node }

    /// Removes and returns every stream of `key`.
    mutating func removeObservers(of key: ListenKey) -> [Observer] {
        let ids = observers.filter { $0.value.key == key }.map(\.key)
        return ids.compactMap { observers.removeValue(forKey: $0) }
    }

    /// Removes and returns every stream.
    mutating func removeAllObservers() -> [Observer] {
        defer { observers = [:] }
        return Array(observers.values)
    }

    // MARK: - data waiters

    mutating func addWaiter(_ key: ListenKey, _ continuation: CheckedContinuation<Void, any Error>) {
        completionWaiters[key, default: []].append(continuation)
    }

    /// The keys someone waits for.
    var waitedKeys: [ListenKey] { Array(completionWaiters.keys) }

    /// Resumes the waiters of `key` (with `error`, or normally).
    mutating func resumeWaiters(_ key: ListenKey, error: ClientError?) {
        for waiter in completionWaiters.removeValue(forKey: key) ?? [] {
            if let error { waiter.resume(throwing: error) } else { waiter.resume() }
        }
    }

    /// Fails every waiter with `error` (the client closed).
    mutating func failAllWaiters(_ error: ClientError) {
        for key in Array(completionWaiters.keys) { resumeWaiters(key, error: error) }
    }
}
