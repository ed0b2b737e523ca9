// DatabaseQuery -- an ordered, ranged, limited view of a location, and the value streams shared with references.

import CanopyCore

/// Anything that can be listened to and refined: a `DatabaseReference` or a `DatabaseQuery`.
public protocol DatabaseQueryable: Sendable {
    /// This location as a query (a reference is the default query at its location).
    var query: DatabaseQuery { get }
}

/// A query over the children of one location. Build it from a reference:
/// `db.ref("scores").orderByValue().limitToLast(3)`.
public struct DatabaseQuery: DatabaseQueryable {
    /// The database this query belongs to.
    public let database: Database
    let location: Path
    let spec: QuerySpec
    var core: SyncCore { database.core }

    public var query: DatabaseQuery { self }

    /// The queried location, `/a/b`.
    public var path: String { location.description }

    func with(_ change: (inout QuerySpec) -> Void) -> DatabaseQuery {
        var spec = spec
        change(&spec)
        return DatabaseQuery(database: database, location: location, spec: spec)
    }
}

extension DatabaseQueryable {
    /// Orders children by the value at `path` below each child.
    public func orderByChild(_ path: String) -> DatabaseQuery {
        query.with { $0.index = .child(Path(segments: Path.segments(splitting: path))) }
    }
    /// Orders children by key.
    public func orderByKey() -> DatabaseQuery { query.with { $0.index = .key } }
    /// Orders children by their own value.
    public func orderByValue() -> DatabaseQuery { query.with { $0.index = .value } }
    /// Orders children by priority (the default).
    public func orderByPriority() -> DatabaseQuery { query.with { $0.index = .priority } }

    /// Keeps children at or after `value` (ties broken by `key` when given).
    public func startAt(_ value: JSONValue, key: String? = nil) -> DatabaseQuery {
        query.with { $0.start = QueryBound(value: value, name: key.map { QueryName.name($0) } ?? .min) }
    }
    /// Keeps children strictly after `value` (or after `key` among children equal to `value`).
    public func startAfter(_ value: JSONValue, key: String? = nil) -> DatabaseQuery {
        query.with {
            $0.start = QueryBound(value: value, name: key.map { QueryName.name($0) } ?? .max, isInclusive: false)
        }
    }
    /// Keeps children at or before `value` (ties broken by `key` when given).
    public func endAt(_ value: JSONValue, key: String? = nil) -> DatabaseQuery {
        query.with { $0.end = QueryBound(value: value, name: key.map { QueryName.name($0) } ?? .max) }
    }
    /// Keeps children strictly before `value` (or before `key` among children equal to `value`).
    public func endBefore(_ value: JSONValue, key: String? = nil) -> DatabaseQuery {
        query.with {
            $0.end = QueryBound(value: value, name: key.map { QueryName.name($0) } ?? .min, isInclusive: false)
        }
    }
    /// Keeps children equal to `value` (and, with `key`, only that child).
    public func equalTo(_ value: JSONValue, key: String? = nil) -> DatabaseQuery {
        startAt(value, key: key).endAt(value, key: key)
    }
    /// Keeps the first `count` children in order.
    public func limitToFirst(_ count: Int) -> DatabaseQuery {
        precondition(count > 0, "limitToFirst needs a positive count")
        return query.with { $0.limit = .first(count) }
    }
    /// Keeps the last `count` children in order.
    public func limitToLast(_ count: Int) -> DatabaseQuery {
        precondition(count > 0, "limitToLast needs a positive count")
        return query.with { $0.limit = .last(count) }
    }

    /// Every visible value: the current one (from cache when offline) first, then one per change.
    ///
    /// Local writes show at once; server changes as they arrive; a value is yielded only when it differs from
    /// the previous one. The stream throws `ClientError.permissionDenied` when the server refuses or revokes the
    /// listen, and ends when the database closes. Stop iterating to unlisten.
    public var values: AsyncThrowingStream<DataSnapshot, any Error> {
        let q = query
        return AsyncThrowingStream { continuation in
            let id = q.core.sync { q.core.addObserver(path: q.location, spec: q.spec, continuation: continuation) }
            // The stream keeps its database alive until it ends.
            continuation.onTermination = { [database = q.database] _ in
                database.core.queue.async { database.core.removeObserver(id) }
            }
        }
    }

    /// Calls `handler` with every value of `values`, in order, until the handle is cancelled.
    /// - Parameter cancelled: called once if the server refuses or revokes the listen.
    public func observe(
        _ handler: @escaping @Sendable (DataSnapshot) -> Void, cancelled: (@Sendable (ClientError) -> Void)? = nil
    ) -> ObservationHandle {
        let stream = values
        let task = Task {
            do {
                for try await snapshot in stream { handler(snapshot) }
            } catch let error as ClientError {
                cancelled?(error)
            } catch {
                cancelled?(.closed)
            }
        }
        return ObservationHandle(task: task)
    }

    /// The current value: the first value `values` yields (from the cache at once when it has the location).
    ///
    /// Like Firebase's `getData`, it does not wait forever: offline with nothing cached for the location (or
    /// with a server that does not answer), it throws `ClientError.timedOut` after `timeout` seconds.
    public func getValue(timeout: Double = 30) async throws -> DataSnapshot {
        precondition(timeout > 0, "getValue needs a positive timeout")
        let stream = values
        let path = query.location.description
        return try await withThrowingTaskGroup(of: DataSnapshot?.self) { group in
            group.addTask {
                for try await snapshot in stream { return snapshot }
                throw ClientError.closed
            }
            group.addTask {
                // A negative, NaN or huge timeout must not trap: clamped to 0 ... about 292 years.
                let nanoseconds = timeout.isNaN ? 0 : min(max(0, timeout) * 1_000_000_000, Double(UInt64.max / 2))
                try await Task.sleep(nanoseconds: UInt64(nanoseconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let snapshot = first else {
                throw ClientError.timedOut(path: path)
            }
            return snapshot
        }
    }
}

/// A running `observe` subscription.
public struct ObservationHandle: Sendable {
    let task: Task<Void, Never>

    /// Stops the subscription (the listen is dropped once no one else uses it).
    public func cancel() { task.cancel() }
}
