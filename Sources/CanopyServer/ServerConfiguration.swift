// ServerConfiguration -- everything `canopy serve` can be told.

import CanopyCore
import CanopyNet

/// Options of one daemon instance.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 9000
    /// Directory holding one SQLite file per namespace, the admin credential and the signing secret.
    public var dataDirectory = "./canopy-data"
    /// Namespace used by requests that name none (pyrebase4 cannot send `ns`).
    public var defaultNamespace = "default"
    /// Emulator compatibility: `Authorization: Bearer owner` is the admin, unsigned tokens are accepted.
    public var emulator = false
    /// `--cluster`, `--node`, `--advertise`: join a cluster on NATS JetStream (Cluster.md); nil runs on the
    /// embedded store alone, as always.
    public var cluster: ClusterConfiguration?
    /// Rules file loaded at start for every namespace that has no rules of its own.
    public var rulesFile: String?
    /// PEM or JWKS files with public keys of external identity providers (RS256/ES256).
    public var publicKeyFiles: [String] = []
    /// Accept signed tokens that have no `exp` (they never expire). Off by default: such a token is refused.
    public var allowTokensWithoutExpiry = false
    /// SQLite `synchronous=FULL` (true, survives power loss) or `NORMAL` (survives process crashes).
    public var synchronousFull = true
    /// Namespaces whose store opens even when committed writes are missing from it (a lost or damaged WAL):
    /// what was recovered is served and becomes the new baseline (`--accept-data-loss <namespace>`). Without it
    /// such a namespace refuses service (503).
    public var acceptDataLossNamespaces: Set<String> = []
    /// `acceptDataLossNamespaces` for every namespace (`--accept-all-data-loss`).
    public var acceptAllDataLoss = false
    /// Largest accepted request body.
    public var maxBodyBytes = 256 * 1024 * 1024
    /// Bytes of all request bodies in flight together (`--max-body-memory`); a body that does not fit is
    /// answered 503 with `Retry-After` and never buffered.
    public var maxBodyMemoryBytes = HTTPServerLimits().maxBodyMemoryBytes
    /// Unsent output of all subscribers together (`--max-output-memory`); past it the largest backlogs are
    /// closed first.
    public var maxOutputMemoryBytes = HTTPServerLimits().outputMemoryLimitBytes
    /// Most simultaneous connections (HTTP, SSE and WebSocket); more are refused with 503.
    public var maxConnections = 10_000
    /// Unsent output a stream or WebSocket may hold before the daemon closes it as a slow consumer.
    public var maxOutputBacklogBytes = HTTPServerLimits().outputHardLimitBytes
    /// Listens one wire connection (WebSocket or long poll) may hold; more are refused with `unavailable`
    /// (`--max-listens-per-connection`).
    public var maxListensPerConnection = 10_000
    /// Listens of all connections together; more are refused with `unavailable` (`--max-listens`).
    public var maxListens = 1_000_000
    /// onDisconnect operations one wire connection may queue; more are refused with `unavailable`
    /// (`--max-ondisconnect-per-connection`).
    public var maxOnDisconnectPerConnection = 10_000
    /// onDisconnect operations of all connections together, queued or still running after their connection
    /// closed; more are refused with `unavailable` (`--max-ondisconnect`).
    public var maxOnDisconnectOperations = 1_000_000
    /// Live long-poll sessions (`--max-longpoll-sessions`); `start` beyond this is answered with 503.
    public var maxLongPollSessions = 10_000
    /// Live long-poll sessions of one client address, an IPv6 client counting by its /64
    /// (`--max-longpoll-sessions-per-address`); must be below `maxLongPollSessions`. Beyond it, 429.
    public var maxLongPollSessionsPerAddress = 100
    /// Characters of long-poll segments waiting to be reassembled, of all sessions together
    /// (`--max-longpoll-pending`, in MiB); a request that would pass it is answered with 503.
    public var maxLongPollPendingCharacters = 256 * 1024 * 1024
    /// The same for the sessions of one client address (room for one largest message); at most the total.
    public var maxLongPollPendingCharactersPerAddress = 32 * 1024 * 1024
    /// Threads shared by every namespace's SQLite work: commits, WAL syncs, loading trees (`--store-threads`).
    public var storeThreads = 4
    /// Most namespaces with a file kept open; past it, idle ones are closed, least recently used first
    /// (`--max-open-namespaces`).
    public var maxOpenNamespaces = 1000
    /// Memory budget for the trees of open namespaces, estimated (`--max-namespace-memory`, in MiB); past it,
    /// idle namespaces are closed, least recently used first.
    public var maxNamespaceMemoryBytes = 1024 * 1024 * 1024
    /// A namespace unused (no session, listen or pending write) for this long is closed (`--namespace-idle`).
    public var namespaceIdleMilliseconds: Int64 = 60_000
    /// How long a drain (SIGTERM) may take before what is still open is closed (`--drain-timeout`).
    public var drainTimeoutMilliseconds: Int64 = 10_000
    /// A second port, on 127.0.0.1, serving `/.canopy/metrics` (and health, readiness) without credentials
    /// (`--metrics-port`; 0 picks a free one); nil serves metrics on the main port to the admin only.
    public var metricsPort: Int? = nil
    /// How long a request waits for its namespace's tree to load before it is answered with 503.
    public var namespaceLoadTimeoutMilliseconds = 30_000
    /// Most requests waiting for one namespace to load; more are answered with 503 at once.
    public var maxRequestsWaitingForLoad = 10_000
    /// Server-side clock (injectable for tests of token expiry).
    public var clock: any WallClock = SystemClock()
    /// The monotonic clock the event loop's timers read: every timeout, keep-alive and idle sweep (a
    /// `ManualClock` in tests, which then decide when time passes).
    public var loopClock: any MonotonicClock = SystemMonotonicClock.shared
    /// Test hook: the most pages a namespace's database file may grow to (`StoreOptions.maximumPageCount`), so a
    /// large write fails like one on a full disk.
    package var maximumPagesPerNamespace: Int? = nil
    /// Test hook: runs on a namespace store's sync thread before each sync of its WAL (`synchronousFull` only).
    package var beforeWALSync: (@Sendable () -> Void)? = nil
    /// Test hook: runs on a namespace store's writer thread before each COMMIT.
    package var beforeStoreCommit: (@Sendable () -> Void)? = nil

    /// Test hook: runs on the compute thread before a large request body is parsed there (to hold the parse).
    package var beforeLargeBodyParse: (@Sendable () -> Void)? = nil

    /// Test hook: runs on a store thread before a namespace's tree is loaded (to hold a load).
    package var beforeNamespaceLoad: (@Sendable (String) -> Void)? = nil
    /// Test hook: called on the store thread once a namespace's store is open, before its rows are read (early
    /// reads are answered meanwhile).
    package var whileNamespaceLoads: (@Sendable (String) -> Void)? = nil
    /// How many rows (or, shallow, children) a read of a loading namespace may take from its file before it
    /// waits for the load instead (RESTEarlyRead).
    package var earlyReadRowLimit = 20_000

    /// Serve HTTPS/WSS with these files (reloaded on SIGHUP); nil serves plaintext.
    public var tls: TLSFiles? = nil

    public init() {}

    /// Whether a loss of committed writes in `namespace` is accepted (see `acceptDataLossNamespaces`).
    public func acceptsDataLoss(in namespace: String) -> Bool {
        acceptAllDataLoss || acceptDataLossNamespaces.contains(namespace)
    }
}

extension ServerConfiguration {
    /// The TLS files of `canopy serve --tls-cert/--tls-key`, or nil to serve plaintext (Architecture.md#TLS).
    public struct TLSFiles: Sendable, Equatable {
        /// PEM certificate chain: the server's certificate first, then intermediates.
        public var certificateFile: String
        /// PEM private key of that certificate.
        public var keyFile: String

        public init(certificateFile: String, keyFile: String) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }
}
