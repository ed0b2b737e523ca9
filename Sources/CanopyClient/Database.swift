// Database -- the entry point of the client SDK: one namespace on one server, its cache and its connection.

import CanopyCore
import Foundation

/// A connection to one Canopy (Firebase Realtime Database compatible) namespace, offline-first.
///
/// ```swift
/// let db = try Database(url: URL(string: "http://127.0.0.1:9000")!, namespace: "demo", token: token,
///                       cacheDirectory: cacheURL)
/// db.ref("rooms/r1/name").setValue("Lobby")          // applied locally at once, queued, synced
/// for try await snapshot in db.ref("rooms").orderByChild("order").limitToLast(10).values { … }
/// await db.close()
/// ```
/// Writes apply to the local view immediately and wait in a persisted FIFO queue until the server acknowledges
/// them. Listened locations are cached (with `cacheDirectory`), so a client started offline shows the last known
/// values. Plain `ws://` only on Linux (TLS needs the Apple transport or a local TLS-terminating proxy).
public final class Database: Sendable {
    let core: SyncCore
    /// The network thread (Linux); nil for other transports.
    private let loopThread: LoopThread?

    /// Opens a database and starts connecting.
    /// - Parameters:
    ///   - url: the server, `http://host:port` (or `ws://`), or `https`/`wss` for TLS (on Linux verified against
    ///     the system's CA store or ``DatabaseOptions/tlsCAFile``, and the host name).
    ///   - namespace: the namespace (`ns`) to use.
    ///   - token: a credential presented after each connect (a JWT, or the admin credential).
    ///   - cacheDirectory: where the cache and write queue live (one SQLite file per namespace); nil keeps
    ///     everything in memory.
    ///   - options: reconnect policy, token refresher, timers.
    /// - Throws: `ClientError.invalidURL`, `.tls` (an unreadable ``DatabaseOptions/tlsCAFile``) or `.storage`.
    public convenience init(
        url: URL, namespace: String, token: String? = nil, cacheDirectory: URL? = nil,
        options: DatabaseOptions = .init()
    ) throws {
        let endpoint = try Endpoint(url: url, namespace: namespace)
        #if os(Linux)
            let tls = endpoint.secure ? try LoopThread.tlsContext(caFile: options.tlsCAFile) : nil
            let loop = try LoopThread(tls: tls)
            try self.init(endpoint: endpoint, token: token, cacheDirectory: cacheDirectory, options: options, loop: loop,
                          transport: loop.factory)
        #else
            try self.init(endpoint: endpoint, token: token, cacheDirectory: cacheDirectory, options: options, loop: nil,
                          transport: URLSessionTransport.factory)
        #endif
    }

    /// Opens a database over any transport (tests pass a scripted one).
    init(
        endpoint: Endpoint, token: String?, cacheDirectory: URL?, options: DatabaseOptions, loop: LoopThread?,
        transport: @escaping TransportFactory
    ) throws {
        var store: StoreWriter?
        if let cacheDirectory {
            do {
                try FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
            } catch {
                throw ClientError.storage(reason: "cannot create the cache directory")
            }
            let file = cacheDirectory.appendingPathComponent(Self.cacheFileName(namespace: endpoint.namespace)).path
            store = try StoreWriter(path: file, logger: Logger(label: "canopy.client"))
        }
        loopThread = loop
        core = SyncCore(endpoint: endpoint, token: token, store: store, options: options, transport: transport)
        try core.sync { [core] in
            try core.loadPersistentState()
            core.start()
        }
    }

    deinit {
        core.queue.async { [core] in core.shutdown() }
        loopThread?.stop(afterMilliseconds: 2_500)
    }

    /// The cache file's name for a namespace (letters, digits, `-` and `_` kept; anything else hex-escaped).
    static func cacheFileName(namespace: String) -> String {
        var name = ""
        for byte in namespace.utf8 {
            if (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2D || byte == 0x5F {
                name.append(Character(Unicode.Scalar(byte)))
            } else {
                name += "%" + String(byte, radix: 16)
            }
        }
        return name + ".canopy-client.sqlite"
    }

    /// The server-time placeholder (`{".sv":"timestamp"}`), the same as `ServerValue.timestamp`.
    public static let serverTimestamp: JSONValue = ServerValue.timestamp

    /// A reference to `path` (`""` or `/` is the root; `.info/connected` is the local connection flag).
    ///
    /// An invalid path (a segment with `. $ # [ ]` or control characters, or more than 32 segments) is a
    /// programmer error and stops the program.
    public func ref(_ path: String = "") -> DatabaseReference {
        DatabaseReference(database: self, path: Self.parse(path))
    }

    static func parse(_ text: String) -> Path {
        let parts = Path.segments(splitting: text)
        if parts.first == SyncCore.infoKey { return Path(segments: parts) }
        do {
            return try Path(parsing: text, allowPriorityLeaf: true)
        } catch {
            preconditionFailure("invalid database path: \(error.userMessage)")
        }
    }

    /// The number of local writes not yet acknowledged by the server.
    public var pendingWriteCount: Int { core.sync { core.writes.userWriteCount } }

    /// The pending write count: the current value first, then every change.
    public var pendingWriteCounts: AsyncStream<Int> { core.pendingCounts() }

    /// The connection state: the current value first, then every change.
    public var connectionStates: AsyncStream<ConnectionState> { core.connectionStates() }

    /// The current connection state.
    public var connectionState: ConnectionState { core.sync { core.connectionState } }

    /// Why the last connection attempt failed or ended, such as a refused TLS certificate; nil until one did.
    public var lastConnectionError: String? { core.sync { core.lastConnectionError } }

    /// Replaces the credential; when connected it is presented at once on the live socket (nil signs out).
    public func setToken(_ token: String?) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.queue.async { [core] in core.setToken(token) { continuation.resume() } }
        }
    }

    /// Called for a fresh token before the current one expires (see `DatabaseOptions.tokenRefresher`).
    public var tokenRefresher: (@Sendable () async -> String?)? {
        get { core.sync { core.tokenRefresher } }
        set { core.sync { core.tokenRefresher = newValue } }
    }

    /// Disconnects and stays offline; writes keep applying locally and queue up.
    public func goOffline() { core.sync { core.goOffline() } }

    /// Reconnects after `goOffline()`.
    public func goOnline() { core.sync { core.goOnline() } }

    /// Closes the connection (the server then runs this client's onDisconnect operations), writes the cache file
    /// and ends every stream. Queued writes stay in the file for the next start: when `close` returns, every
    /// write made before it is in the file and the file is closed.
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.queue.async { [core] in
                core.shutdown()
                core.whenSaved(continuation)
            }
        }
        loopThread?.stop(afterMilliseconds: 2_500)
    }
}
