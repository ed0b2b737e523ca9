// DatabaseOptions -- tuning knobs of a Database: reconnect policy, token refresh, timers; and ConnectionState.

/// Options of a `Database`.
public struct DatabaseOptions: Sendable {
    /// Backoff between reconnect attempts.
    public var reconnect: ReconnectPolicy
    /// Called for a fresh token shortly before the current one expires, when the server revokes it (`ac`), and
    /// when it is refused; the new token is presented on the live connection. Return nil to keep the old one.
    public var tokenRefresher: (@Sendable () async -> String?)?
    /// Seconds without traffic before a ping is sent (Firebase: 45). A connection that received nothing for
    /// twice this long (the server answers every ping) is treated as dead and replaced.
    public var keepAliveInterval: Double
    /// Seconds to wait for the server's handshake after starting to connect (Firebase: 30).
    public var connectTimeout: Double
    /// Seconds to gather changed server values before writing them to the cache file.
    public var cacheFlushDelay: Double
    /// A PEM file of CA certificates to trust for `https`/`wss` instead of the system's store (Linux transport;
    /// the Apple transport uses the system's trust settings). The server's certificate and name are always checked.
    public var tlsCAFile: String?

    /// Creates options.
    public init(
        reconnect: ReconnectPolicy = ReconnectPolicy(), tokenRefresher: (@Sendable () async -> String?)? = nil,
        keepAliveInterval: Double = 45, connectTimeout: Double = 30, cacheFlushDelay: Double = 0.1,
        tlsCAFile: String? = nil
    ) {
        self.tlsCAFile = tlsCAFile
        self.connectTimeout = connectTimeout
        self.reconnect = reconnect
        self.tokenRefresher = tokenRefresher
        self.keepAliveInterval = keepAliveInterval
        self.cacheFlushDelay = cacheFlushDelay
    }
}

/// The state of a Database's connection to the server.
public enum ConnectionState: Sendable, Equatable {
    /// Opening the socket and waiting for the server's handshake.
    case connecting
    /// Handshake done; listens and queued writes have been (re)sent.
    case connected
    /// The connection failed or dropped; a reconnect is scheduled with backoff.
    case disconnected
    /// `goOffline()` was called; nothing is sent until `goOnline()`.
    case offline
    /// `close()` was called.
    case closed
}
