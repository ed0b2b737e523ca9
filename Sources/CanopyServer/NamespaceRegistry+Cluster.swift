// NamespaceRegistry+Cluster -- opening namespaces in cluster mode (Cluster.md): a namespace is served here only
// while this node owns it, loaded from its replicated log when claimed; requests for a namespace another node
// owns are sent there.

import CanopyCore
import CanopyNet
import CanopyRules
import CanopyStore
import Dispatch

extension NamespaceRegistry {
    /// How long a redirect is remembered before the owner is looked up again.
    static let redirectMemoryNanoseconds: UInt64 = 1_000_000_000

    /// A remembered redirect for `name`, if still fresh.
    func rememberedRedirect(_ name: String) -> String? {
        guard let entry = redirects[name] else { return nil }
        if entry.until > monotonicNanoseconds() { return entry.url }
        redirects[name] = nil
        return nil
    }

    /// Claims `name` on the cluster's claim queue: owned here (its tree read from the log, its local cache file
    /// rewritten) or served elsewhere.
    func startClusterLoading(_ name: String, node: ClusterNode, file: String) {
        var cacheOptions = storeOptions(for: name)
        // The log is the durable copy; the local file is a cache, rewritten from the log at every claim, so it
        // costs no fsync per batch (Cluster.md#What-is-replicated).
        cacheOptions.synchronous = .normal
        let options = cacheOptions
        let pool = self.pool
        let loop = self.loop
        let bound = LoopBound(self, loop: loop)
        let rulesPath = configuration.dataDirectory + "/" + name + ".rules.json"
        logger.debug("ns.claiming", ["ns": name])
        node.claimQueue.async {
            let result: Result<LoadedTree, NamespaceUnavailable>
            var replicaRules: String?
            var orphaned: [StoredDisconnects] = []
            do {
                switch try node.claim(name) {
                case .elsewhere(let url, let owner):
                    if node.replicates(name) {
                        let (tree, rules, replica) = try node.replicaStart(name)
                        var rows = 0
                        tree.forEachRecord { _ in rows += 1 }
                        var loaded = LoadedTree(store: nil, root: tree, bytes: rows * Namespace.bytesPerRow)
                        loaded.replica = replica
                        loaded.ownerURL = url
                        replicaRules = rules
                        result = .success(loaded)
                    } else {
                        result = .failure(.elsewhere(namespace: name, node: owner, url: url))
                    }
                case .owned(let tree, let rules, let log):
                    do {
                        let (store, rows) = try Self.rewriteCache(file: file, tree: tree, options: options, pool: pool)
                        try Self.rewriteRules(path: rulesPath, source: rules)
                        result = .success(
                            LoadedTree(store: store, root: tree, bytes: rows * Namespace.bytesPerRow, log: log))
                    } catch {
                        node.giveUp(log)
                        throw error
                    }
                    // Operations that sessions of replicas whose process is gone left for it: performed once the
                    // namespace is open (the loop runs this after `clusterLoaded`).
                    do {
                        orphaned = try node.orphanedDisconnects(of: name)
                    } catch {
                        Logger(label: "canopy.cluster").warning(
                            "cluster.ondisconnect_scan_failed", ["ns": name, "error": "\(error)"])
                    }
                }
            } catch let gap as LogGapError {
                Logger(label: "canopy.cluster").error("cluster.log_gap", ["ns": name, "reason": gap.description])
                result = .failure(.logTrimmed(namespace: name, detail: gap.description))
            } catch {
                result = .failure(.failed(namespace: name, reason: "cluster: \(error)"))
            }
            node.orphanHandled(name)
            let rules = replicaRules
            loop.execute { bound.value?.clusterLoaded(name, result, replicaRules: rules) }
            if !orphaned.isEmpty {
                let found = orphaned
                loop.execute { bound.value?.performOrphanedDisconnects(name, found) }
            }
        }
    }

    /// Performs the onDisconnect operations that sessions of a dead process's replicas stored for `name`, which
    /// this node owns, each as the identity that queued it; then removes their keys. Not owned here (any more):
    /// left for the node that claims it next.
    func performOrphanedDisconnects(_ name: String, _ stored: [StoredDisconnects]) {
        guard let namespace = open[name], namespace.log != nil, let node = cluster else { return }
        for session in stored {
            var operations = session.operations.compactMap(DisconnectOperation.init(stored:))
            if operations.count < session.operations.count {
                logger.error("cluster.ondisconnect_unreadable", ["key": session.key])
            }
            let key = session.key
            let remove: () -> Void = { node.saveDisconnects(key, []) { _ in } }
            guard !operations.isEmpty else {
                remove()
                continue
            }
            operations.whenAllDone(remove)
            onRunDisconnects?(namespace, operations)
        }
    }

    private func clusterLoaded(
        _ name: String, _ result: Result<LoadedTree, NamespaceUnavailable>, replicaRules: String? = nil
    ) {
        if case .failure(.elsewhere(_, _, let url)) = result {
            redirects[name] = (url, monotonicNanoseconds() + Self.redirectMemoryNanoseconds)
        } else {
            redirects[name] = nil
        }
        // A replica gets its rules before the requests that waited for it are served (they would meet the
        // deny-all policy it starts with: the first read of a new replica was refused, even to the admin).
        loaded(name, result) { namespace in
            if let replica = namespace.replica { startReplica(namespace, replica, rules: replicaRules) }
        }
        guard case .success(let tree) = result, let log = tree.log else { return }
        let loop = self.loop
        let bound = LoopBound(self, loop: loop)
        log.onDeposed { reason in loop.execute { bound.value?.depose(name, log: log, reason: reason) } }
        if log.isDeposed { depose(name, log: log, reason: "deposed while loading") }
    }

    /// Starts following the log into a replica's tree: its rules first, then every batch after its start.
    private func startReplica(_ namespace: Namespace, _ replica: NamespaceReplica, rules: String?) {
        let name = namespace.name
        namespace.onReplicatedRules = { [weak namespace] source in namespace.map { Self.applyRules(source, to: $0) } }
        namespace.onOwnerUnavailable = { [weak self, weak namespace] reason in
            // Only this replica: after the first drop, the name may already be served by a new one.
            guard let self, let namespace, self.open[name] === namespace else { return }
            self.dropReplica(name, reason: "a forwarded write found no owner: \(reason)")
        }
        if let rules { Self.applyRules(rules, to: namespace) } else { namespace.policy = defaultPolicy }
        if let cluster, let clusterProxy {
            namespace.forwarder = cluster.forwarder(
                for: name, credential: clusterCredential, replica: replica, proxy: clusterProxy)
            namespace.disconnectStore = ReplicaDisconnectStore(node: cluster, namespace: name, loop: loop)
        }
        let loop = self.loop
        let target = LoopBound(namespace, loop: loop)
        let registry = LoopBound(self, loop: loop)
        replica.start(
            { sequence, batch in loop.execute { target.value?.applyReplicated(batch, sequence: sequence) } },
            failed: { reason in loop.execute { registry.value?.dropReplica(name, reason: reason) } })
        logger.notice("cluster.replica", ["ns": name, "log_seq": "\(replica.applied)"])
    }

    /// Cluster mode: appends `source` to the owned namespace's log (after the writes before it) and, once it is
    /// stored, puts it in force here and saves the local copy; `done` runs on the loop. A failed append changes
    /// nothing: the rules in force stay (Cluster.md#What-is-replicated).
    func setRulesThroughLog(
        _ source: String, compiled: CompiledRules, for namespace: Namespace, log: NamespaceLog,
        _ done: @escaping (Result<Void, LogFailure>) -> Void
    ) {
        loop.assertInLoop()
        namespace.flush()
        let loop = self.loop
        let held = LoopHeld((self, namespace, done), loop: loop)
        log.append(ClusterBatch.encodeRules(source), change: .rules(source)) { result in
            loop.execute {
                let (registry, namespace, done) = held.value
                switch result {
                case .failure(let failure):
                    registry.logger.error("cluster.rules_append_failed", ["ns": namespace.name, "error": "\(failure)"])
                    done(.failure(failure))
                case .success:
                    do {
                        try registry.setRules(source, compiled: compiled, for: namespace)
                    } catch {
                        // In the log, so in force: the local file is only a cache of it (the failure is logged).
                        NamespaceRegistry.putInForce(source, compiled, on: namespace)
                    }
                    registry.logger.info("rules.replaced", ["ns": namespace.name])
                    done(.success(()))
                }
            }
        }
    }

    private static func applyRules(_ source: String, to namespace: Namespace) {
        do {
            putInForce(source, try CompiledRules.compile(source: source), on: namespace)
        } catch {
            namespace.policy = DenyAllPolicy()
            namespace.rulesFailure = "The security rules of namespace '\(namespace.name)' in the log are invalid."
        }
    }

    /// Stops serving a replica (its owner changed to this node, its log cannot be read, or a forwarded write
    /// found no owner): its sessions are
    /// reset, and the next request claims or replicates it again.
    func dropReplica(_ name: String, reason: String) {
        guard let namespace = open[name], let replica = namespace.replica else { return }
        logger.notice("cluster.replica_dropped", ["ns": name, "reason": reason])
        replica.stop()
        open[name] = nil
        namespace.isDeposed = true
        onDeposed?(namespace)
    }

    /// The local cache of a claimed namespace: its old file (whatever it held) replaced by the tree from the log;
    /// with the number of rows written.
    private static func rewriteCache(file: String, tree: Node, options: StoreOptions, pool: StorePool) throws
        -> (store: NamespaceStore, rows: Int)
    {
        for suffix in ["", "-wal", "-shm", "-seq"] { unlink(file + suffix) }
        var options = options
        options.acceptsDataLoss = true
        let store = try NamespaceStore(path: file, options: options, pool: pool)
        let mutations = Namespace.mutations(for: .root, before: .empty, after: tree)
        guard !mutations.isEmpty else { return (store, 0) }
        let done = DispatchSemaphore(value: 0)
        let outcome = ResultBox()
        store.submit(mutations) { result in
            outcome.set(result.map { _ in () }.mapError { $0 })
            done.signal()
        }
        done.wait()
        try outcome.get()
        return (store, mutations.count)
    }

    private static func rewriteRules(path: String, source: String?) throws {
        let file = RulesFile(path: path)
        if let source {
            try file.save(source)
        } else {
            unlink(path)
        }
    }

    /// Another node owns `name` now (the fence refused an append, or this node's lease was lost): stop serving
    /// it. Its sessions are reset (their clients reconnect and are sent to the owner), its file closed.
    func depose(_ name: String, log: NamespaceLog, reason: String) {
        guard let namespace = open[name], namespace.log === log else { return }
        logger.error("cluster.deposed", ["ns": name, "reason": reason])
        open[name] = nil
        namespace.log = nil
        namespace.isDeposed = true
        onDeposed?(namespace)
        namespace.store?.closeWhenDrained {}
    }

    /// This node's lease was lost: every namespace it owned is deposed.
    func deposeAll(reason: String) {
        for namespace in Array(open.values) {
            if let log = namespace.log { depose(namespace.name, log: log, reason: reason) }
        }
    }

    /// A namespace whose owner died, of which this node is the preferred owner: claimed now, without waiting
    /// for a client to ask.
    func claimOrphan(_ name: String) {
        if open[name]?.replica != nil { dropReplica(name, reason: "its owner died; this node claims it") }
        guard open[name] == nil, let node = cluster, let file = try? directory.storePath(for: name) else {
            cluster?.orphanHandled(name)
            return
        }
        var entry = loading[name] ?? Loading()
        guard !entry.isStarted else { return }
        entry.isStarted = true
        loading[name] = entry
        startClusterLoading(name, node: node, file: file)
    }
}

/// A result handed from a store thread to the claim queue.
private final class ResultBox: @unchecked Sendable {  // safe: set before the semaphore signals, read after
    private var value: Result<Void, any Error> = .success(())
    func set(_ result: Result<Void, any Error>) { value = result }
    func get() throws { try value.get() }
}

#if canImport(Glibc)
    import Glibc
#endif
