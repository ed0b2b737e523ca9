// NamespaceRegistry -- opens each namespace on first use (its SQLite file, once it has one, on a store thread).

import CanopyCore
import CanopyNet
import CanopyRules
import CanopyStore

/// All namespaces of a daemon. Loop-confined.
///
/// A namespace whose file exists is loaded on a store thread (`pool`) at first use; requests that arrive meanwhile
/// wait in `loading` (bounded in number and time) while every other namespace is served. Idle namespaces are
/// closed (their trees dropped, their files closed) once the open ones exceed a count or memory budget, least
/// recently used first, or after an idle time; the next request opens them again (see NamespaceRegistry+Idle).
public final class NamespaceRegistry {
    let configuration: ServerConfiguration
    let loop: EventLoop
    var open: [String: Namespace] = [:]
    /// `open.count` after the last `forgetUnused()`; the next one runs once the count has doubled.
    private var countAfterSweep = 0
    let directory: DataDirectory
    /// Rules every namespace starts with when it has none of its own (from `--rules`, else admin-only).
    private let defaultRules: (policy: any AccessPolicy, source: String?)
    let logger = Logger(label: "canopy.server")
    /// Called when a namespace is opened (the realtime layer hooks commits here).
    public var onOpen: ((Namespace) -> Void)?
    /// The store threads every namespace of this daemon shares.
    let pool: StorePool
    /// The daemon's counters (`/.canopy/metrics`); every namespace counts its writes here.
    let metrics = ServerMetrics()
    /// The nice value added to the threads that compute publishes (`computePool`, `EarlyPublishRows`): their CPU
    /// work yields the cores to the event loop.
    static let computeNiceness: Int32 = 10
    /// The thread that computes publishes (CPU work that must not stall the loop, nor take a store thread).
    let computePool = StorePool(threads: 1, name: "canopy.compute", niceness: NamespaceRegistry.computeNiceness)
    /// Namespaces whose tree is being loaded, with the requests waiting for it.
    var loading: [String: Loading] = [:]
    /// Early reads running (RESTEarlyRead).
    var earlyReads = 0
    /// Early reads waiting for one of those running to end, in arrival order (a reconnecting audience asks for
    /// thousands at once).
    var earlyReadQueue: [() -> Void] = []
    /// Namespaces whose file is being closed; a request for one waits (in `loading`) until it is closed.
    var closing: [String: NamespaceStore] = [:]
    var nextWaiterID: UInt64 = 0
    /// Namespaces with a backup or restore under way (one at a time per namespace: see Admin/BackupAPI).
    var archiving: Set<String> = []
    /// The idle sweep's timer (armed while namespaces with files are open).
    var idleTimer: TimerHandle?
    /// Cluster mode: this node's membership (nil in single-node mode). A namespace is served only while this
    /// node owns it; see NamespaceRegistry+Cluster.
    var cluster: ClusterNode?
    /// Cluster mode: namespaces recently found to be served by another node, and until when that is trusted.
    var redirects: [String: (url: String, until: UInt64)] = [:]
    /// Cluster mode: a namespace stopped being served here (another node owns it now); its sessions must go.
    public var onDeposed: ((Namespace) -> Void)?
    /// Cluster mode: performs onDisconnect operations a dead replica's sessions left for an owned namespace (the
    /// realtime hub's queue, as for a connection that dropped here).
    var onRunDisconnects: ((Namespace, [DisconnectOperation]) -> Void)?
    /// Cluster mode: the admin credential a replica forwards its writers' writes with.
    var clusterCredential = ""
    /// Cluster mode: the proxy's threads and keep-alive connections, which a replica's forwarded writes use too.
    var clusterProxy: ClusterProxy?

    /// The requests waiting for one namespace to load.
    struct Loading {
        var waiters: [UInt64: (waiter: (Result<Namespace, NamespaceUnavailable>) -> Void, timer: TimerHandle?)] = [:]
        var isStarted = false
        /// The namespace's store, once the load has opened it (early reads read from it).
        var store: NamespaceStore?
        /// Early reads waiting for the store to be opened; run with nil when the load fails.
        var earlyReads: [(NamespaceStore?) -> Void] = []
        /// The saved rules early reads decide by, read once per load (`.some(nil)`: they cannot be loaded).
        var earlyPolicy: (any AccessPolicy)??
    }

    init(configuration: ServerConfiguration, loop: EventLoop) throws {
        self.configuration = configuration
        self.loop = loop
        self.directory = try DataDirectory(path: configuration.dataDirectory)
        self.pool = StorePool(threads: configuration.storeThreads)
        if let file = configuration.rulesFile {
            // Unreadable or invalid: the daemon does not start (`canopy serve` prints why and exits with 1).
            let loaded = try RulesFile(path: file).load()
            defaultRules = (RulesPolicy(rules: loaded.rules), loaded.source)
        } else if configuration.emulator {
            // The Firebase RTDB emulator starts every namespace with open rules ({".read": true, ".write": true};
            // firebase-tools #2483) and the JS SDK's useEmulator() sends no credential at all, so emulator mode
            // does the same. Without --emulator, no rules means admin-only (secure by default).
            let open = #"{"rules": {".read": true, ".write": true}}"#
            defaultRules = (RulesPolicy(rules: try CompiledRules.compile(source: open)), open)
        } else {
            defaultRules = (AdminOnlyPolicy(), nil)
        }
        loop.addBeforeSleepHook { [weak self] in self?.flushAll() }
    }

    /// The namespace called `name` when it can be had without waiting: open already, or without a file (created
    /// in memory when `create`); nil if it does not exist.
    /// - Throws: `NamespaceUnavailable.loading` when its file exists and its tree is not loaded yet (the load is
    ///   started: use `whenOpen` to wait for it), `StoreError`/`CanopyError` for a bad name.
    public func namespace(_ name: String, create: Bool) throws -> Namespace? {
        if let existing = open[name] {
            // Cluster mode: past its lease (cut off from NATS, or paused) a node serves nothing it owned: another
            // node may own it already (Cluster.md#Ownership-leases-and-fencing, local expiry).
            if existing.log != nil, let cluster, !cluster.leaseIsValid {
                throw NamespaceUnavailable.leaseExpired(namespace: name)
            }
            touch(existing)
            return existing
        }
        let file = try directory.storePath(for: name)
        if cluster != nil {
            // Served here only once claimed (or refused by its owner node): every first use waits for the claim.
            if let url = rememberedRedirect(name), loading[name] == nil {
                throw NamespaceUnavailable.elsewhere(namespace: name, node: "", url: url)
            }
            startLoading(name)
            throw NamespaceUnavailable.loading(namespace: name)
        }
        if fileExists(file) || (closing[name] != nil) || loading[name] != nil {
            startLoading(name)
            throw NamespaceUnavailable.loading(namespace: name)
        }
        if !create && rulesFile(for: name).isAbsent { return nil }
        if open.count >= max(64, 2 * countAfterSweep) { forgetUnused() }
        let namespace = makeNamespace(name, store: nil, root: .empty, bytes: 0)
        register(namespace)
        return namespace
    }

    /// Runs `body` with the namespace once it is open: at once when it is open or has no file, else once its
    /// tree is loaded on a store thread (or with the error when it cannot be, or does not load in time).
    public func whenOpen(
        _ name: String, create: Bool, _ body: @escaping (Result<Namespace?, any Error>) -> Void
    ) {
        do {
            body(.success(try namespace(name, create: create)))
            return
        } catch NamespaceUnavailable.loading {
            // Waits below.
        } catch {
            body(.failure(error))
            return
        }
        guard var entry = loading[name] else { return body(.failure(NamespaceUnavailable.loading(namespace: name))) }
        guard entry.waiters.count < configuration.maxRequestsWaitingForLoad else {
            return body(.failure(NamespaceUnavailable.tooManyWaiting(namespace: name)))
        }
        nextWaiterID += 1
        let id = nextWaiterID
        let limit = configuration.namespaceLoadTimeoutMilliseconds
        let timer = loop.schedule(afterMilliseconds: Int64(limit)) { [weak self] in
            guard let waiter = self?.loading[name]?.waiters.removeValue(forKey: id) else { return }
            self?.logger.warning("ns.load_slow", ["ns": name, "waited_ms": "\(limit)"])
            waiter.waiter(.failure(NamespaceUnavailable.timedOut(namespace: name, milliseconds: limit)))
        }
        entry.waiters[id] = ({ result in body(result.map { $0 }.mapError { $0 }) }, timer)
        loading[name] = entry
    }

    /// Whether a request for `name` must wait: its file exists and its tree is not in memory.
    func mustWait(for name: String) -> Bool {
        guard open[name] == nil else { return false }
        guard let file = try? directory.storePath(for: name) else { return false }
        if cluster != nil { return true }
        return loading[name] != nil || (closing[name] != nil) || fileExists(file)
    }

    /// Starts loading `name` on a store thread unless it is loading already (or closing: then once closed).
    func startLoading(_ name: String) {
        var entry = loading[name] ?? Loading()
        defer { loading[name] = entry }
        guard !entry.isStarted, !(closing[name] != nil), let file = try? directory.storePath(for: name) else { return }
        entry.isStarted = true
        if let cluster { return startClusterLoading(name, node: cluster, file: file) }
        let options = storeOptions(for: name)
        let pool = self.pool
        let hook = configuration.beforeNamespaceLoad
        let whileLoading = configuration.whileNamespaceLoads
        let loop = self.loop
        let bound = LoopBound(self, loop: loop)
        logger.debug("ns.loading", ["ns": name])
        pool.run {
            hook?(name)
            let result: Result<LoadedTree, NamespaceUnavailable>
            do {
                let store = try NamespaceStore(path: file, options: options, pool: pool)
                loop.execute { bound.value?.storeOpened(name, store) }
                whileLoading?(name)
                let (root, bytes) = try Namespace.loadMeasured(from: store)
                result = .success(LoadedTree(store: store, root: root, bytes: bytes))
            } catch {
                result = .failure(.opening(name, error))
            }
            loop.execute { bound.value?.loaded(name, result) }
        }
    }

    /// The load of `name` has opened its store: early reads may read it.
    private func storeOpened(_ name: String, _ store: NamespaceStore) {
        guard var entry = loading[name] else { return }
        entry.store = store
        let waiting = entry.earlyReads
        entry.earlyReads = []
        loading[name] = entry
        for read in waiting { read(store) }
    }

    /// A tree read on a store thread, with its open store and its rules text.
    struct LoadedTree: Sendable {
        /// nil for a cluster replica (it stores nothing).
        var store: NamespaceStore?
        var root: Node
        var bytes: Int
        /// Cluster mode: the log of the namespace this node claimed.
        var log: NamespaceLog? = nil
        /// Cluster mode: the replica of a namespace another node owns (`--replicate`), and the owner's URL.
        var replica: NamespaceReplica? = nil
        var ownerURL: String? = nil
    }

    /// Loads of trees estimated at least this large give the memory they freed back (`returnFreedMemory`).
    static let trimAfterLoadBytes = 32 << 20

    /// A load finished: the namespace is registered and `prepare`d, then every request waiting for it goes on.
    func loaded(
        _ name: String, _ result: Result<LoadedTree, NamespaceUnavailable>, prepare: (Namespace) -> Void = { _ in }
    ) {
        let entry = loading.removeValue(forKey: name) ?? Loading()
        for read in entry.earlyReads { read(nil) }
        let outcome: Result<Namespace, NamespaceUnavailable>
        switch result {
        case .success(let tree):
            let namespace = makeNamespace(
                name, store: tree.store, root: tree.root, bytes: tree.bytes)
            namespace.log = tree.log
            namespace.replica = tree.replica
            namespace.replicaOwnerURL = tree.ownerURL
            if tree.replica != nil { namespace.policy = DenyAllPolicy() }  // until the log's rules are applied
            metrics.namespaceLoads &+= 1
            // A large load freed its builder's slots between the tree's nodes: given back to the system (a list
            // of 800,000 leaves stayed at 8.3 × its file without this, 3.7 × with it).
            if tree.bytes >= Self.trimAfterLoadBytes { returnFreedMemory() }
            register(namespace)
            prepare(namespace)
            outcome = .success(namespace)
        case .failure(let error):
            switch error {
            case .failed(_, let reason): logger.error("ns.open_failed", ["ns": name, "error": reason])
            case .dataLoss(_, let expected, let found):
                logger.error(
                    "ns.data_loss",
                    [
                        "ns": name, "expected_revision": expected.map { "\($0)" } ?? "unreadable",
                        "found_revision": "\(found)", "accept_with": "--accept-data-loss \(name)",
                    ])
            default: break
            }
            outcome = .failure(error)
        }
        for (_, waiter) in entry.waiters.sorted(by: { $0.key < $1.key }) {
            waiter.timer?.cancel()
            waiter.waiter(outcome)
        }
        closeIdleOverBudget()
    }

    /// The options of `namespace`'s store.
    func storeOptions(for namespace: String) -> StoreOptions {
        var options = StoreOptions(synchronous: configuration.synchronousFull ? .full : .normal)
        options.acceptsDataLoss = configuration.acceptsDataLoss(in: namespace)
        options.beforeSync = configuration.beforeWALSync
        options.beforeCommit = configuration.beforeStoreCommit
        options.maximumPageCount = configuration.maximumPagesPerNamespace
        options.commitLatency = metrics.commitLatency
        options.syncLatency = metrics.syncLatency
        return options
    }

    /// A namespace object for a tree already in memory; its saved rules (a small file) are read here, and fail
    /// closed (`loadSavedRules`).
    private func makeNamespace(_ name: String, store: NamespaceStore?, root: Node, bytes: Int) -> Namespace {
        let file = (try? directory.storePath(for: name)) ?? ""
        let options = storeOptions(for: name)
        let pool = self.pool
        // A namespace that has no file yet gets one at its first write (see `Namespace.store`), on a store thread.
        let create = { @Sendable (done: @escaping @Sendable (Result<NamespaceStore, StoreError>) -> Void) in
            pool.run {
                do throws(StoreError) {
                    done(.success(try NamespaceStore(path: file, options: options, pool: pool)))
                } catch {
                    done(.failure(error))
                }
            }
        }
        let namespace = Namespace(
            name: name, store: store, root: root, openStore: create, loop: loop, policy: defaultRules.policy)
        namespace.estimatedBytes = bytes
        namespace.metrics = metrics
        let computePool = self.computePool
        namespace.offLoop = { work in computePool.run(work) }
        namespace.parsesDraftsOn = { work in computePool.run(work) }
        namespace.rulesSource = defaultRules.source
        loadSavedRules(into: namespace)
        return namespace
    }

    private func register(_ namespace: Namespace) {
        open[namespace.name] = namespace
        touch(namespace)
        logger.info("ns.open", ["ns": namespace.name])
        onOpen?(namespace)
    }

    /// The policy of namespaces that have no rules of their own (and of reads of namespaces with no data).
    var defaultPolicy: any AccessPolicy { defaultRules.policy }
    /// The rules text `GET /.settings/rules.json` shows for such namespaces.
    var defaultRulesSource: String { defaultRules.source ?? #"{"rules": {".read": false, ".write": false}}"# }

    /// Every namespace currently open.
    public var openNamespaces: [Namespace] { Array(open.values) }

    /// Replaces a namespace's rules and persists them next to its database file. This is also how an admin
    /// repairs a namespace whose saved rules could not be loaded: service resumes with the new rules.
    ///
    /// - Throws: `RulesFileError` (`.notSaved`) when the file cannot be written; the rules in force stay.
    /// In cluster mode, an owned namespace's rules go through its log first: ``setRulesThroughLog(_:compiled:for:log:_:)``.
    func setRules(_ source: String, compiled: CompiledRules, for namespace: Namespace) throws(RulesFileError) {
        let file = rulesFile(for: namespace.name)
        do {
            try file.save(source)
        } catch {
            logger.error("rules.save_failed", ["ns": namespace.name, "file": file.path, "error": error.reason])
            throw error
        }
        if namespace.rulesFailure != nil { logger.notice("rules.repaired", ["ns": namespace.name]) }
        Self.putInForce(source, compiled, on: namespace)
    }

    /// Makes `compiled` the rules `namespace` judges by and `source` the text it shows, ending a rules failure.
    static func putInForce(_ source: String, _ compiled: CompiledRules, on namespace: Namespace) {
        namespace.policy = RulesPolicy(rules: compiled)
        namespace.rulesSource = source
        namespace.rulesFailure = nil
    }

    /// Gives a namespace being opened its saved rules, if it has any. Saved rules that cannot be read or compiled
    /// fail closed, loudly: the namespace refuses service (see `Namespace.rulesFailure`) and the log says which
    /// file and why. Falling back to the default rules instead could open data the saved rules protect.
    /// The policy `name` will have once open (its saved rules, else the default); nil when its saved rules
    /// cannot be loaded (the namespace then refuses every request).
    func savedPolicy(for name: String) -> (any AccessPolicy)? {
        let file = rulesFile(for: name)
        if file.isAbsent { return defaultRules.policy }
        return (try? file.load()).map { RulesPolicy(rules: $0.rules) }
    }

    private func loadSavedRules(into namespace: Namespace) {
        let file = rulesFile(for: namespace.name)
        if file.isAbsent { return }
        do {
            let saved = try file.load()
            namespace.policy = RulesPolicy(rules: saved.rules)
            namespace.rulesSource = saved.source
        } catch {
            logger.error(
                "rules.load_failed",
                ["ns": namespace.name, "file": file.path, "error": error.reason, "effect": "namespace refused"])
            namespace.policy = DenyAllPolicy()
            namespace.rulesSource = nil
            namespace.rulesFailure =
                "The security rules of namespace '\(namespace.name)' could not be loaded "
                + "(\(error.problem == .invalid ? "invalid: " : "")\(error.reason)). It refuses every request until "
                + "an admin replaces them with PUT /.settings/rules.json."
        }
    }

    private func rulesFile(for name: String) -> RulesFile {
        RulesFile(path: configuration.dataDirectory + "/" + name + ".rules.json")
    }

    /// Forgets namespaces that exist only in memory (never written, so no file) and that nothing uses any more:
    /// requests naming ever new namespaces that do not exist must not grow memory without bound. Runs when the
    /// number of open namespaces has doubled since the last time, so it costs O(1) per opened namespace.
    /// A namespace is in use while anything else holds it (a session, a listen group, a pending request).
    func forgetUnused() {
        let before = open.count
        for name in Array(open.keys) where open[name]?.isEmptyWithoutFile == true {
            if isKnownUniquelyReferenced(&open[name]!) { open[name] = nil }
        }
        countAfterSweep = open.count
        logger.debug("ns.forgotten", ["count": "\(before - open.count)", "open": "\(open.count)"])
    }

    private func flushAll() {
        for namespace in open.values { namespace.flush() }
    }

    /// Flushes and closes every namespace (graceful shutdown), then lets the store threads exit.
    func closeAll() {
        for namespace in open.values { namespace.close() }
        open.removeAll()
        for store in closing.values { store.flushAndClose() }
        idleTimer?.cancel()
        pool.shutdown()
        computePool.shutdown()
    }
}

func fileExists(_ path: String) -> Bool {
    access(path, F_OK) == 0
}

#if canImport(Glibc)
    import Glibc
#endif
