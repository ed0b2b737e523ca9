// ConnectionMachine -- the client's connection as a state machine: events in, actions out, time passed in.
//
// The machine decides; `SyncCore` performs. Every event method takes the current monotonic time, mutates the
// state and returns the actions to perform, in order; the machine itself opens no socket, sends nothing and
// sets no timer. Instead it exposes `nextDeadline`, the earliest instant at which `tick(now:)` has something to
// do (a handshake timeout, a reconnect, a ping, a dead-link check, a token refresh); the caller arms one timer
// for it. So the whole lifecycle is tested by feeding events and advancing time by hand.
//
//   idle ──start──▶ connecting ──handshake──▶ connected
//                     │  ▲                       │
//      closed/timeout │  └──retry time──┐        │ closed / silent / server reset
//                     ▼                 │        ▼
//                   waiting(retryAt) ◀──┴────────┘        any ──goOffline──▶ offline ──goOnline──▶ connecting
//                                                         any ──close──▶ closed (final)
//
// Each connection attempt has a number; transport events of an older attempt are ignored (`accepts`).
// Liveness: a connected link sends a ping after `keepAliveInterval` without traffic either way, and is replaced
// once nothing was received for twice that long (a dead Wi-Fi link may never report a TCP error; the server
// answers every ping, Protocol.md#Liveness). Token refresh: a refresh is due shortly before the accepted
// token expires (at most 60 s, at most half its remaining life, early), after a refusal (at most 3 in a row)
// and after a revocation; the refresh deadline outlives a reconnect and is cancelled by a new token.

/// The client's connection lifecycle: phase, reconnect backoff, liveness and token-refresh timing.
struct ConnectionMachine: Sendable {
    /// The timing knobs (from `DatabaseOptions`).
    struct Configuration: Sendable {
        var reconnect: ReconnectPolicy
        /// Seconds without traffic before a ping; a link silent for twice this long is dead.
        var keepAliveInterval: Double
        /// Seconds to wait for the server's handshake.
        var connectTimeout: Double
    }

    /// Why a connection ended.
    enum LossReason: Sendable, Equatable {
        /// The transport failed or closed (also a frame that cannot be parsed).
        case transportClosed
        /// No handshake within `connectTimeout`.
        case connectTimeout
        /// Nothing received for twice `keepAliveInterval`.
        case silent
        /// The server asked for a reconnect (`r`): reconnect at once.
        case serverReset
        /// `goOffline()`.
        case offline
    }

    /// What the caller does, in the order returned.
    enum Action: Sendable, Equatable {
        /// Open a transport for this attempt (reset the frame assembler); report failure with `transportClosed`.
        case openTransport(attempt: Int)
        /// Close the current transport.
        case closeTransport
        /// Send a keep-alive ping.
        case ping
        /// The handshake completed: run the restore sequence and announce `.info/connected = true`.
        case restore
        /// The connection ended: fail requests in flight, mark listens unconfirmed, announce the loss.
        case connectionLost(wasConnected: Bool, reason: LossReason)
        /// Publish a new `ConnectionState`.
        case publish(ConnectionState)
        /// Ask the token refresher for a new token.
        case refreshToken
    }

    /// A live connection's timestamps.
    struct Link: Sendable, Equatable {
        var attempt: Int
        var since: MonotonicInstant
        /// A frame was last sent or received.
        var lastTraffic: MonotonicInstant
        var lastReceived: MonotonicInstant
    }

    enum State: Sendable, Equatable {
        /// Created, not started.
        case idle
        /// Waiting for the transport and the server's handshake until `deadline`.
        case connecting(attempt: Int, deadline: MonotonicInstant)
        case connected(Link)
        /// Disconnected; the next attempt starts at `retryAt`.
        case waiting(retryAt: MonotonicInstant)
        /// `goOffline()`: no attempts until `goOnline()`.
        case offline
        /// `close()`: final.
        case closed
    }

    let configuration: Configuration
    private(set) var state = State.idle
    private var attempt = 0
    private var backoff: Backoff
    /// Auth refusals in a row (the refresher is asked at most 3 times).
    private var authFailures = 0
    private(set) var refreshAt: MonotonicInstant?
    /// A number in `0..<1` for the backoff's jitter.
    private let random: @Sendable () -> Double

    init(
        configuration: Configuration,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.configuration = configuration
        self.random = random
        backoff = Backoff(policy: configuration.reconnect)
    }

    // MARK: - queries

    var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    var isClosed: Bool { state == .closed }

    /// Whether a transport event of `attempt` belongs to the current connection.
    func accepts(_ attempt: Int) -> Bool {
        switch state {
        case .connecting(let current, _): return current == attempt
        case .connected(let link): return link.attempt == attempt
        case .idle, .waiting, .offline, .closed: return false
        }
    }

    /// The earliest instant at which `tick(now:)` acts; nil when nothing is timed.
    var nextDeadline: MonotonicInstant? {
        var deadline: MonotonicInstant?
        switch state {
        case .connecting(_, let timeout): deadline = timeout
        case .waiting(let retryAt): deadline = retryAt
        case .connected(let link):
            let interval = configuration.keepAliveInterval
            deadline = min(
                link.lastTraffic.advanced(bySeconds: interval),
                link.lastReceived.advanced(bySeconds: 2 * interval))
        case .idle, .offline, .closed: break
        }
        guard let refreshAt else { return deadline }
        return deadline.map { min($0, refreshAt) } ?? refreshAt
    }

    // MARK: - lifecycle events

    /// The client was created: the first attempt starts.
    mutating func start(now: MonotonicInstant) -> [Action] {
        guard state == .idle else { return [] }
        return connect(now: now)
    }

    /// `goOffline()`: drops the connection, stops reconnecting.
    mutating func goOffline(now: MonotonicInstant) -> [Action] {
        switch state {
        case .offline, .closed: return []
        case .connecting, .connected: return lose(now: now, reason: .offline)
        case .idle, .waiting:
            state = .offline
            return [.publish(.offline)]
        }
    }

    /// `goOnline()`: after `goOffline()`, connects at once with a fresh backoff schedule.
    mutating func goOnline(now: MonotonicInstant) -> [Action] {
        guard state == .offline else { return [] }
        backoff.reset()
        return connect(now: now)
    }

    /// `close()`: final; closes the transport if there is one.
    mutating func close() -> [Action] {
        let hadTransport: Bool
        switch state {
        case .closed: return []
        case .connecting, .connected: hadTransport = true
        case .idle, .waiting, .offline: hadTransport = false
        }
        state = .closed
        refreshAt = nil
        return (hadTransport ? [.closeTransport] : []) + [.publish(.closed)]
    }

    // MARK: - transport events

    /// A frame arrived (or the transport opened) on `attempt`. Returns false when it belongs to an older
    /// connection and must be ignored.
    mutating func received(attempt: Int, now: MonotonicInstant) -> Bool {
        guard accepts(attempt) else { return false }
        if case .connected(var link) = state {
            link.lastTraffic = now
            link.lastReceived = now
            state = .connected(link)
        }
        return true
    }

    /// The client sent a frame on the current connection.
    mutating func sent(now: MonotonicInstant) {
        guard case .connected(var link) = state else { return }
        link.lastTraffic = now
        state = .connected(link)
    }

    /// The server's handshake arrived on `attempt`.
    mutating func handshake(attempt: Int, now: MonotonicInstant) -> [Action] {
        guard case .connecting(let current, _) = state, current == attempt else { return [] }
        state = .connected(Link(attempt: attempt, since: now, lastTraffic: now, lastReceived: now))
        authFailures = 0
        return [.restore, .publish(.connected)]
    }

    /// The transport of `attempt` failed, closed, or delivered something unusable.
    mutating func transportClosed(attempt: Int, now: MonotonicInstant) -> [Action] {
        guard accepts(attempt) else { return [] }
        return lose(now: now, reason: .transportClosed)
    }

    /// The server asked the client to reconnect (`r`).
    mutating func serverRequestedReconnect(now: MonotonicInstant) -> [Action] {
        guard isConnected else { return [] }
        return lose(now: now, reason: .serverReset)
    }

    /// Time passed: performs whatever is due at `now`.
    mutating func tick(now: MonotonicInstant) -> [Action] {
        var actions: [Action] = []
        switch state {
        case .connecting(_, let deadline) where now >= deadline:
            actions = lose(now: now, reason: .connectTimeout)
        case .waiting(let retryAt) where now >= retryAt:
            actions = connect(now: now)
        case .connected(var link):
            let interval = configuration.keepAliveInterval
            if now.seconds(since: link.lastReceived) >= 2 * interval {
                actions = lose(now: now, reason: .silent)
            } else if now.seconds(since: link.lastTraffic) >= interval {
                link.lastTraffic = now
                state = .connected(link)
                actions = [.ping]
            }
        default:
            break
        }
        if let refreshAt, now >= refreshAt {
            self.refreshAt = nil
            actions.append(.refreshToken)
        }
        return actions
    }

    // MARK: - auth events

    /// The server accepted a token that expires in `expiresIn` seconds (nil: no expiry given). A refresh is
    /// scheduled only when the client has a refresher.
    mutating func authAccepted(expiresIn: Double?, refreshable: Bool, now: MonotonicInstant) {
        authFailures = 0
        refreshAt = nil
        guard let remaining = expiresIn, refreshable else { return }
        refreshAt = now.advanced(bySeconds: max(0, remaining - min(60, remaining / 2)))
    }

    /// The server refused a token; the socket stays up, unauthenticated.
    mutating func authRefused() -> [Action] {
        authFailures += 1
        return authFailures <= 3 ? [.refreshToken] : []
    }

    /// The server revoked the token (`ac`).
    func authRevoked() -> [Action] { [.refreshToken] }

    /// The application replaced the token: any scheduled refresh is for the old one.
    mutating func tokenReplaced() { refreshAt = nil }

    // MARK: - transitions

    private mutating func connect(now: MonotonicInstant) -> [Action] {
        attempt += 1
        state = .connecting(
            attempt: attempt, deadline: now.advanced(bySeconds: configuration.connectTimeout))
        return [.publish(.connecting), .openTransport(attempt: attempt)]
    }

    private mutating func lose(now: MonotonicInstant, reason: LossReason) -> [Action] {
        var wasConnected = false
        if case .connected(let link) = state {
            wasConnected = true
            backoff.connectionEnded(afterSeconds: now.seconds(since: link.since))
        }
        var actions: [Action] = [
            .closeTransport, .connectionLost(wasConnected: wasConnected, reason: reason),
        ]
        if reason == .offline {
            state = .offline
            actions.append(.publish(.offline))
            return actions
        }
        let delay =
            reason == .serverReset || reason == .silent ? 0 : backoff.nextDelay(random: random())
        state = .waiting(retryAt: now.advanced(bySeconds: delay))
        actions.append(.publish(.disconnected))
        return actions
    }
}
