// Daemon -- the composition root: data directory, credentials, namespaces, HTTP server, signals, shutdown.

import CanopyCore
import CanopyNet
import CanopyRules
import CanopyStore
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A running Canopy server. Create it, `start()` it, then `run()` blocks until SIGTERM/SIGINT or `stop()`.
public final class Daemon: @unchecked Sendable {  // safe: loop state is touched only on `loop`; see `stop()`
    public let configuration: ServerConfiguration
    public let credentials: Credentials
    let loop: EventLoop
    private var server: HTTPServer?
    /// `--metrics-port`'s server (loopback, metrics and health only); it stays open until the drain ends.
    private var metricsServer: HTTPServer?
    private var context: ServerContext?
    private var isShuttingDown = false
    /// Fires at `drainTimeoutMilliseconds` after a drain began: whatever is still open is closed.
    private var drainDeadline: TimerHandle?
    private var drainStarted: UInt64 = 0
    private var isFinishingDrain = false
    /// Held from `init` until the stopped daemon has closed its databases (then another may use the directory).
    private var directoryLock: DataDirectory.Lock?
    private let logger = Logger(label: "canopy.server")
    /// Cluster mode: this node's membership, left on shutdown.
    private var clusterNode: ClusterNode?

    public init(configuration: ServerConfiguration) throws {
        self.configuration = configuration
        // One process per data directory: a second daemon (or an offline import) is refused.
        directoryLock = try DataDirectory(path: configuration.dataDirectory).lock()
        credentials = try Credentials(configuration: configuration)
        loop = try EventLoop(clock: configuration.loopClock)
    }

    /// Binds the listening socket; `port` is known afterwards.
    public func start() throws {
        let tlsContext = try configuration.tls.map(Self.loadTLS)  // bad files refuse to start, naming the path
        let context = try openDatabases()
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = configuration.maxBodyBytes
        limits.maxConnections = configuration.maxConnections
        limits.outputHardLimitBytes = configuration.maxOutputBacklogBytes
        limits.shutdownTimeoutMs = configuration.drainTimeoutMilliseconds
        limits.maxBodyMemoryBytes = configuration.maxBodyMemoryBytes
        limits.outputMemoryLimitBytes = configuration.maxOutputMemoryBytes
        let server = try HTTPServer(
            loop: loop, host: configuration.host, port: configuration.port, limits: limits,
            handler: RESTHandler(context: context))
        if let metricsPort = configuration.metricsPort {
            var metricsLimits = HTTPServerLimits()
            metricsLimits.maxConnections = 64
            metricsLimits.maxBodyBytes = 64 * 1024
            let metricsServer = try HTTPServer(
                loop: loop, host: "127.0.0.1", port: metricsPort, limits: metricsLimits,
                handler: OperationsHandler(context: context))
            try metricsServer.start()
            self.metricsServer = metricsServer
            logger.info("server.metrics_listening", ["url": "http://127.0.0.1:\(metricsServer.port)/.canopy/metrics"])
        }
        server.tlsContext = tlsContext
        try server.start()
        self.server = server
        context.server = server
        logger.info("server.listening", ["url": "\(scheme)://\(configuration.host):\(server.port)"])
    }

    /// The bound metrics port (`--metrics-port`), or nil without one.
    public var metricsPort: Int? { metricsServer?.port }

    /// The namespaces and the realtime hub, without a listening socket.
    private func openDatabases() throws -> ServerContext {
        let registry = try NamespaceRegistry(configuration: configuration, loop: loop)
        let context = ServerContext(
            configuration: configuration, credentials: credentials, registry: registry, loop: loop)
        self.context = context
        let computePool = registry.computePool
        context.compute = { work in computePool.run(work) }
        let hub = RealtimeHub(context: context, loop: loop)
        context.realtime = hub
        registry.onOpen = { [unowned hub] namespace in hub.attach(namespace) }
        registry.onDeposed = { [unowned hub] namespace in hub.namespaceDeposed(namespace) }
        registry.onRunDisconnects = { [unowned hub] namespace, operations in
            hub.runDisconnectOperations(operations, in: namespace)
        }
        if let cluster = configuration.cluster {
            try joinCluster(cluster, registry: registry)
            if cluster.replicateAbove != nil && !cluster.replicates { reportLoad(hub: hub) }
        }
        return context
    }

    /// Tells the cluster node, once a second, how many clients each namespace has here and how many
    /// connections this node holds: its lease carries them to the nodes that decide on replicas by load.
    private func reportLoad(hub: RealtimeHub) {
        _ = loop.schedule(afterMilliseconds: 1000) { [weak self, weak hub] in
            guard let self, let hub, let node = self.clusterNode else { return }
            node.reportLoad(hub.clientsPerNamespace(), connections: self.server?.connectionCount ?? 0)
            self.reportLoad(hub: hub)
        }
    }

    /// Joins the cluster (Cluster.md): connects to NATS, registers this node's lease, and from then on claims
    /// namespaces as they are used, or as their owners die.
    private func joinCluster(_ cluster: ClusterConfiguration, registry: NamespaceRegistry) throws {
        let node = try ClusterNode(configuration: cluster)
        registry.cluster = node
        registry.clusterCredential = credentials.adminCredential
        let proxy = ClusterProxy(node: cluster.node)
        context?.proxy = proxy
        registry.clusterProxy = proxy
        let loop = self.loop
        let bound = LoopBound(registry, loop: loop)
        node.onOrphan = { name in loop.execute { bound.value?.claimOrphan(name) } }
        node.onOrphanedDisconnects = { name, stored in
            loop.execute { bound.value?.performOrphanedDisconnects(name, stored) }
        }
        node.onLeaseLost = { loop.execute { bound.value?.deposeAll(reason: "this node's cluster lease was lost") } }
        node.start()
        clusterNode = node
        logger.notice(
            "cluster.joined",
            ["node": cluster.node, "advertise": cluster.advertise, "lease_ms": "\(node.configuration.leaseMilliseconds)"])
        if !ClusterConfiguration.host(of: cluster.advertise).lowercased().hasPrefix("s-") {
            // The JS SDK forgets a host it was sent to only if it begins with `s-`: reset to this node, its
            // clients would retry it until their page is reloaded once it dies (Cluster.md#How-a-client-reaches-its-node).
            logger.warning("cluster.advertise_not_cacheable", ["advertise": cluster.advertise])
        }
    }

    /// Performs one write as the admin on `namespace` of a data directory that no daemon serves (offline
    /// `canopy import`), through the same pipeline as every served write, and closes the databases.
    /// - Throws: `StoreError` when the directory is in use or cannot be opened; the `WriteError` of the write.
    public static func performOffline(
        _ operation: WriteOperation, on namespace: String, configuration: ServerConfiguration
    ) throws {
        let daemon = try Daemon(configuration: configuration)
        let outcome = Mutex<Result<Void, any Error>>(.success(()))
        let thread = Thread { daemon.loop.run() }
        let done = DispatchSemaphore(value: 0)
        daemon.loop.execute {
            func finish(_ error: (any Error)?) {
                if let error { outcome.withLock { $0 = .failure(error) } }
                daemon.context?.registry.closeAll()
                daemon.loop.stop()
                done.signal()
            }
            do {
                let context = try daemon.openDatabases()
                // Loaded on a store thread when the namespace has a file, as for a served request.
                context.registry.whenOpen(namespace, create: true) { opened in
                    do {
                        guard let target = try opened.get() else { return finish(NamespaceError.unavailable(namespace)) }
                        target.perform(operation, as: .admin, now: configuration.clock.nowMilliseconds()) { result in
                            if case .failure(let error) = result { return finish(error) }
                            finish(nil)
                        }
                    } catch {
                        finish(error)
                    }
                }
            } catch {
                finish(error)
            }
        }
        thread.start()
        done.wait()
        try outcome.withLock { $0 }.get()
    }

    /// The bound port.
    public var port: Int { server?.port ?? configuration.port }

    /// Runs the event loop on the calling thread until shutdown; handles SIGTERM and SIGINT gracefully.
    public func run() {
        loop.onSignals([SIGTERM, SIGINT]) { [weak self] signal in
            self?.logger.info("server.signal", ["signal": "\(signal)"])
            self?.shutdown()
        }
        if let files = configuration.tls {
            loop.onSignals([SIGHUP]) { [weak self] _ in
                guard let self, let server = self.server else { return }
                Self.reloadTLS(files, into: server, logger: self.logger)
            }
        }
        loop.run()
    }

    /// Opens a namespace on the loop and runs `body` with it (tools and tests).
    public func withNamespace(_ name: String, _ body: @escaping @Sendable (Namespace) -> Void) {
        loop.execute { [weak self] in
            self?.context?.registry.whenOpen(name, create: true) { result in
                guard case .success(let ns?) = result else { return }
                body(ns)
            }
        }
    }

    /// The names of the namespaces open now, sorted (tests); call from another thread than the loop's.
    func openNamespaceNames() -> [String] {
        let answer = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        loop.execute { [weak self] in
            answer.withLock { $0 = (self?.context?.registry.openNamespaces.map(\.name) ?? []).sorted() }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 10)
        return answer.withLock { $0 }
    }

    /// Loads `document` into `namespace` if that namespace holds no data yet, and gives it `rulesSource`
    /// (`canopy serve --demo`). Runs on the loop once it starts.
    public func seedIfEmpty(namespace name: String, document: ExportDocument, rulesSource: String?) {
        let logger = self.logger
        loop.execute { [weak self] in
            guard let self, let context = self.context else { return }
            context.registry.whenOpen(name, create: true) { result in
                do {
                    guard let namespace = try result.get() else { return }
                    try Self.seed(namespace, document: document, rulesSource: rulesSource, context: context)
                } catch {
                    logger.error("demo.failed", ["ns": name, "error": "\(error)"])
                }
            }
        }
    }

    /// Gives `namespace` its rules and, when it holds nothing, the document. In cluster mode the rules go through
    /// the namespace's log first, and the document is written only once they are stored and in force.
    private static func seed(
        _ namespace: Namespace, document: ExportDocument, rulesSource: String?, context: ServerContext,
        attempt: Int = 1
    ) throws {
        guard let rulesSource else { return seedDocument(namespace, document: document, context: context) }
        let compiled = try CompiledRules.compile(source: rulesSource)
        guard let log = namespace.log else {
            try context.registry.setRules(rulesSource, compiled: compiled, for: namespace)
            return seedDocument(namespace, document: document, context: context)
        }
        // The log holds these rules already (an earlier start): nothing to append.
        guard namespace.rulesSource != rulesSource else {
            return seedDocument(namespace, document: document, context: context)
        }
        context.registry.setRulesThroughLog(rulesSource, compiled: compiled, for: namespace, log: log) { result in
            switch result {
            case .success:
                context.realtime?.rulesChanged(in: namespace)
                seedDocument(namespace, document: document, context: context)
            case .failure(.failed(let reason)) where attempt < seedRulesAttempts:
                // NATS did not store them within the append's own retries: tried again a little later, while
                // this node still owns the namespace.
                let logger = Logger(label: "canopy.server")
                logger.warning("demo.rules_retry", ["ns": namespace.name, "attempt": "\(attempt)", "error": reason])
                _ = context.loop.schedule(afterMilliseconds: 2_000) {
                    guard !namespace.isDeposed else { return }
                    try? seed(namespace, document: document, rulesSource: rulesSource, context: context, attempt: attempt + 1)
                }
            case .failure(let failure):
                Logger(label: "canopy.server").error(
                    "demo.failed", ["ns": namespace.name, "error": "its rules are not in the cluster's log: \(failure)"])
            }
        }
    }

    /// How many times the demo's rules are appended before the demo gives up (each append retries for 12 s).
    static let seedRulesAttempts = 5

    private static func seedDocument(_ namespace: Namespace, document: ExportDocument, context: ServerContext) {
        guard namespace.root.isEmpty else { return }
        let logger = Logger(label: "canopy.server")
        namespace.perform(
            .set(path: .root, data: document.data.json(export: true)), as: .admin,
            now: context.configuration.clock.nowMilliseconds()
        ) { result in
            switch result {
            case .success: logger.info("demo.loaded", ["ns": namespace.name])
            case .failure(let error): logger.error("demo.failed", ["ns": namespace.name, "error": error.userMessage])
            }
        }
    }

    /// Graceful shutdown from any thread: stop accepting, let in-flight requests finish, close the databases.
    public func stop() {
        loop.execute { [weak self] in self?.shutdown() }
    }

    /// Drains (SIGTERM, SIGINT, `stop()`): stop accepting, answer `/.canopy/ready` with 503, let in-flight requests
    /// and writes finish, tell WebSocket clients to reconnect once their writes are durable, end streams, close
    /// the databases; whatever is still open at `drainTimeoutMilliseconds` is closed then.
    /// The order is Architecture.md#Operations-and-draining.
    private func shutdown() {
        guard let server, !isShuttingDown else {
            if self.server == nil { loop.stop() }
            return
        }
        isShuttingDown = true
        drainStarted = loop.clock.nowNanoseconds()
        context?.isDraining = true
        server.stopAccepting()
        logger.info("server.draining", ["timeout_ms": "\(configuration.drainTimeoutMilliseconds)"])
        drainDeadline = loop.schedule(afterMilliseconds: configuration.drainTimeoutMilliseconds) { [weak self] in
            self?.finishDrain(force: true)
        }
        // Held long polls are in-flight requests: answered (with the close command) now, not at the deadline.
        guard let realtime = context?.realtime else { return finishDrain(force: false) }
        realtime.shuttingDown { [weak self] in self?.finishDrain(force: false) }
    }

    /// Closes the HTTP connections (gracefully: in-flight answers complete, within what is left of the deadline),
    /// then the databases, and stops the loop.
    private func finishDrain(force: Bool) {
        guard let server, !isFinishingDrain else {
            // The deadline passed while the graceful close was under way: close everything now.
            if force, isFinishingDrain { server?.forceCloseAll() }
            return
        }
        isFinishingDrain = true
        if !force { drainDeadline?.cancel() }
        drainDeadline = nil
        if !force {
            let elapsedMs = Int64((loop.clock.nowNanoseconds() &- drainStarted) / 1_000_000)
            let left = max(0, configuration.drainTimeoutMilliseconds - elapsedMs)
            // The rest of the deadline bounds the graceful close.
            drainDeadline = loop.schedule(afterMilliseconds: left) { [weak self] in self?.server?.forceCloseAll() }
        }
        // The closure keeps the server alive until its connections drained.
        server.shutdown(graceful: !force) { [self, server] in
            _ = server
            self.drainDeadline?.cancel()
            self.drainDeadline = nil
            self.server = nil
            self.context?.registry.closeAll()
            // Leaving the cluster on purpose: the lease goes now, so other nodes take the namespaces at once.
            self.clusterNode?.stop()
            self.clusterNode = nil
            self.directoryLock = nil
            if let metricsServer = self.metricsServer {
                metricsServer.shutdown(graceful: false) { _ = metricsServer }
                self.metricsServer = nil
            }
            self.logger.info("server.stopped")
            self.loop.stop()
        }
    }
}
