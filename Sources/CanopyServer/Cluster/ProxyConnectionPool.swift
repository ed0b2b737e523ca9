// ProxyConnectionPool -- the keep-alive HTTP/1.1 connections a node keeps to the owners it proxies REST requests
// to (ClusterProxy), so a proxied request costs one request on an open connection, not a TCP handshake.
//
// The rules, after RFC 9112 §9.3 (persistence) and RFC 9110 §9.2.2 (idempotent methods):
// - A connection goes back to the pool only after a complete response that left it open: a length-delimited or
//   chunked body, no `Connection: close` (HTTPClient closes itself otherwise, and `isOpen` is false).
// - Reuse takes the most recently returned connection (the others age out) after a non-blocking peek: one the
//   owner closed while idle, or that holds unasked bytes, is closed instead of used.
// - A request on a reused connection that fails before any byte of its response arrived may have failed because
//   the owner closed the connection as it was sent; it is sent again once, on a new connection, only when its
//   method is safe to repeat (``ProxyConnectionPool/mayResend(_:)``: GET, HEAD, OPTIONS). Any other request may
//   have reached the owner and been applied, so its failure is answered (502), never resent. A failure on a new
//   connection, or after a response byte, is never retried.
// - Idle connections are closed after ``ProxyPoolState/idleTimeoutNanoseconds`` (well under the owner's own idle
//   timeout of 120 s, so the owner rarely closes one first), at the next use of the pool and by a sweep.
// - At most ``ProxyPoolState/maximumIdlePerOwner`` idle connections per owner; connections in use are bounded by
//   the proxy's requests in flight (`ClusterProxy.maximumInFlight`).
// Event streams never use the pool: each holds a connection of its own for as long as it lasts.

import CanopyCore
import CanopyNet
import Dispatch
import Synchronization

/// The idle connections per owner and when each went idle. Pure: time is passed in; what must be closed is
/// returned, never closed here.
struct ProxyPoolState<Connection> {
    struct Idle {
        var connection: Connection
        var sinceNanoseconds: UInt64
    }

    let maximumIdlePerOwner: Int
    let idleTimeoutNanoseconds: UInt64
    private(set) var idle: [String: [Idle]] = [:]

    init(maximumIdlePerOwner: Int, idleTimeoutNanoseconds: UInt64) {
        precondition(maximumIdlePerOwner > 0)
        self.maximumIdlePerOwner = maximumIdlePerOwner
        self.idleTimeoutNanoseconds = idleTimeoutNanoseconds
    }

    /// Idle connections in the pool, over every owner.
    var idleCount: Int { idle.values.reduce(0) { $0 + $1.count } }

    /// The most recently returned connection to `owner` that has not been idle too long, and the expired ones
    /// (of every owner) to close.
    mutating func checkOut(owner: String, now: UInt64) -> (connection: Connection?, expired: [Connection]) {
        let expired = sweep(now: now)
        guard var list = idle[owner], let last = list.popLast() else { return (nil, expired) }
        idle[owner] = list.isEmpty ? nil : list
        return (last.connection, expired)
    }

    /// Returns a connection that is open after a complete response; gives back what to close: the expired
    /// connections, and the oldest idle one when the owner already has the most allowed.
    mutating func checkIn(_ connection: Connection, owner: String, now: UInt64) -> [Connection] {
        var closing = sweep(now: now)
        var list = idle[owner] ?? []
        list.append(Idle(connection: connection, sinceNanoseconds: now))
        if list.count > maximumIdlePerOwner { closing.append(list.removeFirst().connection) }
        idle[owner] = list
        return closing
    }

    /// Removes and returns the connections idle for at least the timeout.
    mutating func sweep(now: UInt64) -> [Connection] {
        var expired: [Connection] = []
        for (owner, list) in idle {
            let (old, fresh) = list.reduce(into: ([Idle](), [Idle]())) { split, entry in
                if now &- entry.sinceNanoseconds >= idleTimeoutNanoseconds {
                    split.0.append(entry)
                } else {
                    split.1.append(entry)
                }
            }
            guard !old.isEmpty else { continue }
            expired += old.map(\.connection)
            idle[owner] = fresh.isEmpty ? nil : fresh
        }
        return expired
    }
}

/// One HTTPClient, used by one proxy thread at a time: checked out of the pool under its lock, used, checked in.
final class ProxyConnection: @unchecked Sendable {  // safe: owned by one thread at a time (see above)
    let client: HTTPClient
    init(client: HTTPClient) { self.client = client }
}

/// The pool the proxy's threads share (thread-safe), and the request logic that uses it.
final class ProxyConnectionPool: Sendable {
    /// Idle connections kept per owner at most.
    static let defaultMaximumIdlePerOwner = 64
    /// How long a connection may stay idle in the pool.
    static let defaultIdleTimeoutMilliseconds: Int64 = 15_000

    private let state: Mutex<ProxyPoolState<ProxyConnection>>
    private let clock: any MonotonicClock
    private let timeoutSeconds: Int
    private let sweepIntervalMilliseconds: Int
    /// True while a sweep is scheduled (one is, whenever a connection is idle).
    private let sweepScheduled = Atomic<Bool>(false)
    /// New connections opened, over the pool's life (a reused request opens none).
    private let opened = Atomic<Int>(0)

    /// - Parameters:
    ///   - timeoutSeconds: each connection's send and receive timeout.
    ///   - clock: the time idle connections age by.
    init(
        maximumIdlePerOwner: Int = defaultMaximumIdlePerOwner,
        idleTimeoutMilliseconds: Int64 = defaultIdleTimeoutMilliseconds, timeoutSeconds: Int = 30,
        clock: any MonotonicClock = SystemMonotonicClock.shared
    ) {
        state = Mutex(
            ProxyPoolState(
                maximumIdlePerOwner: maximumIdlePerOwner,
                idleTimeoutNanoseconds: UInt64(idleTimeoutMilliseconds) * 1_000_000))
        self.clock = clock
        self.timeoutSeconds = timeoutSeconds
        sweepIntervalMilliseconds = Int(max(idleTimeoutMilliseconds / 2, 100))
    }

    deinit {
        for connection in state.withLock({ $0.sweep(now: .max) }) { connection.client.close() }
    }

    /// Idle connections now, over every owner.
    var idleCount: Int { state.withLock { $0.idleCount } }
    /// New connections opened so far.
    var openedCount: Int { opened.load(ordering: .relaxed) }

    /// Whether a request that failed on a reused connection before any response byte may be sent again: only
    /// methods a repeat cannot change the outcome of. PUT and DELETE are idempotent in RFC 9110's sense, but a
    /// repeat that lands after another client's write would undo it, and a conditional one (ETag, a replica's
    /// transaction hash) would be refused after it succeeded: they are not resent.
    static func mayResend(_ method: String) -> Bool { ["GET", "HEAD", "OPTIONS"].contains(method) }

    /// Sends one request to `host:port` on a pooled connection (or a new one) and returns the complete response.
    /// Blocks: call it on a proxy thread, never on a loop.
    func request(
        host: String, port: Int, _ method: String, _ target: String, headers: [(String, String)], body: [UInt8]
    ) throws -> HTTPClientResponse {
        let owner = "\(host):\(port)"
        while let pooled = checkOut(owner) {
            guard pooled.client.isIdleAndUsable else {
                pooled.client.close()
                continue
            }
            do {
                let response = try pooled.client.requestOnce(method, target, headers: headers, body: body)
                checkIn(pooled, owner)
                return response
            } catch {
                guard !pooled.client.receivedResponseBytes, Self.mayResend(method) else { throw error }
                break  // once, on a new connection
            }
        }
        let fresh = ProxyConnection(client: HTTPClient(host: host, port: port, timeoutSeconds: timeoutSeconds))
        opened.add(1, ordering: .relaxed)
        let response = try fresh.client.requestOnce(method, target, headers: headers, body: body)
        checkIn(fresh, owner)
        return response
    }

    /// Closes the connections idle for too long.
    func sweep() {
        let now = clock.nowNanoseconds()
        for connection in state.withLock({ $0.sweep(now: now) }) { connection.client.close() }
    }

    private func checkOut(_ owner: String) -> ProxyConnection? {
        let now = clock.nowNanoseconds()
        let (connection, expired) = state.withLock { $0.checkOut(owner: owner, now: now) }
        for old in expired { old.client.close() }
        return connection
    }

    /// Back into the pool if the response left the connection open; closed otherwise.
    private func checkIn(_ connection: ProxyConnection, _ owner: String) {
        guard connection.client.isOpen else { return connection.client.close() }
        let now = clock.nowNanoseconds()
        for old in state.withLock({ $0.checkIn(connection, owner: owner, now: now) }) { old.client.close() }
        scheduleSweep()
    }

    /// A sweep in half the idle timeout, then again while connections stay idle.
    private func scheduleSweep() {
        guard sweepScheduled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(sweepIntervalMilliseconds)) {
            [weak self] in
            guard let self else { return }
            sweepScheduled.store(false, ordering: .relaxed)
            sweep()
            if idleCount > 0 { scheduleSweep() }
        }
    }
}
