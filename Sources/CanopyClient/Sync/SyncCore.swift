// SyncCore -- the coordinator of the client: one serial queue owns the parts and performs what they decide.
//
// Every stored property is read and written only on `queue` (a serial DispatchQueue: the client's one
// executor). Public API calls enter with `queue.sync` (they are never made on the queue: user code runs on
// streams' consumers, never on it); transport events and timers enter with `queue.async`. Nothing on the queue
// waits for anything else — SQLite included: the file belongs to the store writer's own queue — and no user
// code runs on it, so there is no lock ordering to get wrong and a caller waits only for in-memory work.
//
// The parts, each a value that is read and tested alone (Firebase's "sync tree" reduced to what this client
// needs):
//   connection   ConnectionMachine: phase, backoff, liveness, token-refresh timing (events in, actions out)
//   listens      ListenRegistry: listens with their tags and users, streams, data waiters
//   cache        LocalCache: server values of default listens, query windows, what is known, what to save
//   writes       WriteQueue: pending local writes layered over either (WriteTree), outcomes and waiters
//   requests     RequestQueue: request numbers, reply handlers, deferred requests, frames held for the store
//   storeWriter  StoreWriter: the SQLite file (cache rows and the persisted write queue) on its own queue
// The coordinator keeps what joins them: the transport, the timer, the `.info` values and the evaluation of
// each stream's value.

import CanopyCore
import Dispatch
import Foundation
import Synchronization

final class SyncCore: @unchecked Sendable {
    // Invariant: every `var` below is touched only on `queue` (see the file header).
    let queue = DispatchQueue(label: "canopy.client.sync")
    let endpoint: Endpoint
    let options: DatabaseOptions
    let storeWriter: StoreWriter?
    let makeTransport: TransportFactory
    let clock: any MonotonicClock
    let pushIDs: PushIDSource
    let serverOffset: ServerTimeOffset
    let logger = Logger(label: "canopy.client")

    // parts
    var connection: ConnectionMachine
    var listens = ListenRegistry()
    var cache = LocalCache()
    var writes = WriteQueue()
    var requests = RequestQueue()

    // auth
    var token: String?
    var tokenRefresher: (@Sendable () async -> String?)?

    // the current transport
    var transport: (any ClientTransport)?
    /// Where a server's reset (`{"t":"c","d":{"t":"r","d":"host:port"}}`) sent the client: a cluster node that
    /// does not serve the namespace names the one that does. Used until a connection to it fails before its
    /// handshake (that node died), then the configured endpoint is tried again. Queue only.
    var redirect: Endpoint?
    /// Whether the current connection attempt received a reset (a node redirecting before its handshake). Queue only.
    var resetInAttempt = false
    var assembler = FrameAssembler()
    /// The earliest connection deadline a timer is armed for.
    var armedDeadline: MonotonicInstant?

    // local state joined from the parts
    var info: [String: JSONValue] = ["connected": false, "serverTimeOffset": 0]
    var isCacheFlushScheduled = false
    /// Locations changed since observers were last evaluated (see `refresh(affecting:)`).
    var changedPaths: Set<Path> = []
    var isRefreshScheduled = false

    // observable counters
    var countContinuations: [Int: AsyncStream<Int>.Continuation] = [:]
    var stateContinuations: [Int: AsyncStream<ConnectionState>.Continuation] = [:]
    var nextContinuationID = 1
    var connectionState = ConnectionState.disconnected
    /// Why the last transport failed or ended (a refused TLS certificate, a refused connection). Queue only.
    var lastConnectionError: String?

    init(
        endpoint: Endpoint, token: String?, store: StoreWriter?, options: DatabaseOptions,
        transport: @escaping TransportFactory, clock: any MonotonicClock = SystemMonotonicClock()
    ) {
        self.endpoint = endpoint
        self.token = token
        self.options = options
        self.makeTransport = transport
        self.clock = clock
        self.tokenRefresher = options.tokenRefresher
        storeWriter = store
        connection = ConnectionMachine(
            configuration: .init(
                reconnect: options.reconnect, keepAliveInterval: options.keepAliveInterval,
                connectTimeout: options.connectTimeout))
        let offset = ServerTimeOffset()
        serverOffset = offset
        pushIDs = PushIDSource(clock: offset)
    }

    /// Runs `body` on the queue and returns its result. Never call from the queue.
    func sync<T>(_ body: () throws -> T) rethrows -> T {
        dispatchPrecondition(condition: .notOnQueue(queue))
        return try queue.sync(execute: body)
    }

    var isClosed: Bool { connection.isClosed }

    // MARK: - observable counters

    func publishPendingCount() {
        let count = writes.userWriteCount
        for continuation in countContinuations.values { continuation.yield(count) }
    }

    func setConnectionState(_ state: ConnectionState) {
        guard state != connectionState else { return }
        connectionState = state
        for continuation in stateContinuations.values { continuation.yield(state) }
    }

    func pendingCounts() -> AsyncStream<Int> {
        AsyncStream { continuation in
            sync {
                continuation.yield(writes.userWriteCount)
                register(continuation, in: \.countContinuations)
            }
        }
    }

    func connectionStates() -> AsyncStream<ConnectionState> {
        AsyncStream { continuation in
            sync {
                continuation.yield(connectionState)
                register(continuation, in: \.stateContinuations)
            }
        }
    }

    /// Keeps `continuation` in `list` until its stream ends (finishes it at once when closed). Queue only.
    private func register<T>(
        _ continuation: AsyncStream<T>.Continuation,
        in list: any ReferenceWritableKeyPath<SyncCore, [Int: AsyncStream<T>.Continuation]> & Sendable
    ) {
        let id = nextContinuationID
        nextContinuationID += 1
        if isClosed {
            continuation.finish()
            return
        }
        self[keyPath: list][id] = continuation
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.queue.async { self[keyPath: list][id] = nil }
        }
    }

    // MARK: - time

    /// The estimated server time in milliseconds.
    var serverNow: Int64 { serverOffset.nowMilliseconds() }
}

/// The server clock as estimated from the handshake's `ts`: a wall clock for push IDs and local timestamps.
final class ServerTimeOffset: WallClock, Sendable {
    private let offset = Mutex<Int64>(0)

    func set(_ milliseconds: Int64) { offset.withLock { $0 = milliseconds } }
    var milliseconds: Int64 { offset.withLock { $0 } }

    func nowMilliseconds() -> Int64 { SystemClock().nowMilliseconds().addingSaturated(milliseconds) }
}
