// SyncCore -- the client's state: server data, pending writes, listens, the connection; one serial queue owns it.
//
// Every stored property is read and written only on `queue` (a serial DispatchQueue: the client's one
// executor). Public API calls enter with `queue.sync` (they are never made on the queue: user code runs on
// streams' consumers, never on it); transport events and timers enter with `queue.async`. Nothing on the queue
// waits for anything else, and no user code runs on it, so there is no lock ordering to get wrong.
//
// Layers (Firebase's "sync tree" reduced to what this client needs):
//   serverTree      server values of default listens (and whatever stayed cached from earlier ones)
//   queryViews      server windows of query listens, by listen
//   writes          pending local writes, layered over either (WriteTree)
//   observers       each stream's last delivered value; an event goes out only when the visible value changed

import CanopyCore
import Dispatch
import Foundation
import Synchronization

/// A listened location as the server knows it: a path and, for ranged/limited queries, the query.
struct ListenKey: Hashable, Sendable {
    var path: Path
    /// nil for a default listen (the whole location).
    var query: QuerySpec?
}

/// A listen's bookkeeping.
struct ListenState: Sendable {
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
    var lastFromCache = false
}

/// How a request ended.
enum RequestOutcome: Sendable {
    case reply(status: String, data: JSONValue)
    /// The connection dropped before the reply.
    case disconnected
}

/// The phase of the connection.
enum Phase: Sendable, Equatable {
    case idle, connecting, connected
}

final class SyncCore: @unchecked Sendable {
    // Invariant: every `var` below is touched only on `queue` (see the file header).
    let queue = DispatchQueue(label: "canopy.client.sync")
    let endpoint: Endpoint
    let options: DatabaseOptions
    let store: ClientStore?
    let makeTransport: TransportFactory
    let pushIDs: PushIDSource
    let logger = Logger(label: "canopy.client")

    var token: String?
    var tokenRefresher: (@Sendable () async -> String?)?
    var refreshTimer: DispatchWorkItem?

    // connection
    var phase = Phase.idle
    var transport: (any ClientTransport)?
    var generation = 0
    var assembler = FrameAssembler()
    var connectedAt: Date?
    var backoff: Backoff
    var isOnline = true
    var isClosed = false
    var nextRequest: Int64 = 1
    var replyHandlers: [Int64: (RequestOutcome) -> Void] = [:]
    /// Requests waiting for a connection (onDisconnect registrations, transaction puts).
    var deferred: [(action: String, body: JSONValue, handler: (RequestOutcome) -> Void)] = []
    /// When a frame was last sent or received, and last received (liveness).
    var lastTraffic = Date()
    var lastReceived = Date()
    /// Auth replies refused in a row on this connection (the refresher is asked at most 3 times).
    var authFailures = 0
    let serverOffset: ServerTimeOffset

    // data
    var serverTree = Node.empty
    var queryViews: [ListenKey: Node] = [:]
    /// Listens whose server data we hold (from this run or the cache file), possibly stale.
    var known: Set<ListenKey> = []
    var dirty: Set<ListenKey> = []
    var flushScheduled = false
    var info: [String: JSONValue] = ["connected": false, "serverTimeOffset": 0]
    var writes = WriteTree()
    /// Locations changed since observers were last evaluated (see `refresh(affecting:)`).
    var changedPaths: Set<Path> = []
    var isRefreshScheduled = false
    var nextWriteID: Int64 = 1
    var finished: [Int64: (status: WriteStatus, error: ClientError?)] = [:]
    var finishedOrder: [Int64] = []
    var writeWaiters: [Int64: [CheckedContinuation<Void, any Error>]] = [:]

    // listens
    var listens: [ListenKey: ListenState] = [:]
    var tags: [Int64: ListenKey] = [:]
    var nextTag: Int64 = 1
    var nextListenSerial = 1
    var observers: [Int: Observer] = [:]
    var nextObserverID = 1
    var completionWaiters: [ListenKey: [CheckedContinuation<Void, any Error>]] = [:]

    // observable counters
    var countContinuations: [Int: AsyncStream<Int>.Continuation] = [:]
    var stateContinuations: [Int: AsyncStream<ConnectionState>.Continuation] = [:]
    var nextContinuationID = 1
    var connectionState = ConnectionState.disconnected
    var closeWaiters: [CheckedContinuation<Void, Never>] = []

    init(endpoint: Endpoint, token: String?, store: ClientStore?, options: DatabaseOptions, transport: @escaping TransportFactory) {
        self.endpoint = endpoint
        self.token = token
        self.store = store
        self.options = options
        self.makeTransport = transport
        self.tokenRefresher = options.tokenRefresher
        backoff = Backoff(policy: options.reconnect)
        let offset = ServerTimeOffset()
        serverOffset = offset
        pushIDs = PushIDSource(clock: offset)
    }

    /// Runs `body` on the queue and returns its result. Never call from the queue.
    func sync<T>(_ body: () throws -> T) rethrows -> T {
        dispatchPrecondition(condition: .notOnQueue(queue))
        return try queue.sync(execute: body)
    }

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
                let id = nextContinuationID
                nextContinuationID += 1
                continuation.yield(writes.userWriteCount)
                if isClosed {
                    continuation.finish()
                    return
                }
                countContinuations[id] = continuation
                continuation.onTermination = { [weak self] _ in
                    guard let self else { return }
                    self.queue.async { self.countContinuations[id] = nil }
                }
            }
        }
    }

    func connectionStates() -> AsyncStream<ConnectionState> {
        AsyncStream { continuation in
            sync {
                let id = nextContinuationID
                nextContinuationID += 1
                continuation.yield(connectionState)
                if isClosed {
                    continuation.finish()
                    return
                }
                stateContinuations[id] = continuation
                continuation.onTermination = { [weak self] _ in
                    guard let self else { return }
                    self.queue.async { self.stateContinuations[id] = nil }
                }
            }
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

    func nowMilliseconds() -> Int64 { SystemClock().nowMilliseconds() + milliseconds }
}
