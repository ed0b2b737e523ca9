// NamespaceRegistry+Idle -- closing idle namespaces, least recently used first, and reopening them on demand.
//
// Resources follow use: an open namespace holds its whole tree in memory and an open SQLite file (three
// descriptors: the database, its WAL and shared memory, plus one for the WAL syncer). A namespace is idle when
// nothing but the registry holds it (no wire session, listen group, stream or pending request) and it has no
// write open, in flight or held. Idle namespaces are closed when the open ones with a file exceed
// `maxOpenNamespaces` or their estimated trees exceed `maxNamespaceMemoryBytes` (least recently used first), and
// after `namespaceIdleMilliseconds` without use. Closing drops the tree at once and closes the file on a store
// thread; a request that arrives meanwhile waits (like one for a namespace that is loading) and opens it again.

import CCanopyLinux
import CanopyCore
import CanopyNet
import CanopyStore

extension NamespaceRegistry {
    /// Marks `namespace` as used now.
    func touch(_ namespace: Namespace) {
        namespace.lastUsed = monotonicNanoseconds() / 1_000_000
        armIdleTimer()
    }

    /// Arms the idle sweep while namespaces are open (one without a file now may have one at the next sweep).
    func armIdleTimer() {
        guard idleTimer == nil else { return }
        let period = max(10, min(configuration.namespaceIdleMilliseconds / 4, 10_000))
        idleTimer = loop.schedule(afterMilliseconds: period) { [weak self] in
            guard let self else { return }
            self.idleTimer = nil
            self.closeIdle()
            if !self.open.isEmpty { self.armIdleTimer() }
        }
    }

    /// Closes namespaces unused for longer than the idle time, then enforces the budgets.
    func closeIdle() {
        let now = monotonicNanoseconds() / 1_000_000
        let limit = UInt64(max(0, configuration.namespaceIdleMilliseconds))
        let before = closing.count
        for name in closableNames() where now &- (open[name]?.lastUsed ?? now) >= limit {
            close(name)
        }
        closeIdleOverBudget()
        if closing.count > before { returnFreedMemory() }
    }

    /// Gives the memory of the trees just dropped back to the system (glibc keeps freed memory in its arenas:
    /// without this, RSS stays at its high-water mark after idle namespaces close). On a store thread: trimming
    /// walks the heap.
    func returnFreedMemory() {
        pool.run { _ = malloc_trim(0) }
    }

    /// While the open namespaces with a file or a replica exceed the count or memory budget, closes idle ones,
    /// least recently used first, except the one used last: closing it makes room for no other namespace, and its
    /// next request would load it again (a namespace larger than the whole budget was closed between the writes
    /// filling it). It is closed once another one is used.
    func closeIdleOverBudget() {
        var count = 0
        var bytes = 0
        for namespace in open.values where namespace.hasFile || namespace.replica != nil {
            count += 1
            bytes += namespace.estimatedBytes
        }
        guard count > configuration.maxOpenNamespaces || bytes > configuration.maxNamespaceMemoryBytes else { return }
        let newest = open.values.max { $0.lastUsed < $1.lastUsed }?.name
        let candidates = closableNames().filter { $0 != newest }.sorted {
            (open[$0]?.lastUsed ?? 0) < (open[$1]?.lastUsed ?? 0)
        }
        for name in candidates {
            guard count > configuration.maxOpenNamespaces || bytes > configuration.maxNamespaceMemoryBytes else {
                break
            }
            bytes -= open[name]?.estimatedBytes ?? 0
            count -= 1
            close(name)
        }
    }

    /// Open namespaces with a file, and replicas (Cluster.md#How-a-client-reaches-its-node), that nothing else
    /// holds and that have no write pending.
    private func closableNames() -> [String] {
        var names: [String] = []
        for name in Array(open.keys) {
            // No local reference to the namespace: it would defeat the uniqueness check below.
            guard open[name]?.hasFile == true || open[name]?.replica != nil, open[name]?.isIdle == true else { continue }
            if isKnownUniquelyReferenced(&open[name]!) { names.append(name) }
        }
        return names
    }

    /// Drops an idle namespace's tree and closes its file on a store thread.
    private func close(_ name: String) {
        guard let namespace = open.removeValue(forKey: name) else { return }
        if let replica = namespace.replica {
            replica.stop()
            logger.notice("cluster.replica_closed", ["ns": name, "reason": "idle"])
        }
        guard let store = namespace.detachStore() else { return }
        // Cluster mode: the node stops appending; its owner record stays, so the next use claims it again here.
        if let log = namespace.log {
            cluster?.giveUp(log)
            namespace.log = nil
        }
        closing[name] = store
        logger.debug("ns.closing", ["ns": name])
        let loop = self.loop
        let bound = LoopBound(self, loop: loop)
        store.closeWhenDrained { loop.execute { bound.value?.closed(name) } }
    }

    /// The file of `name` is closed: requests that waited for it open it again.
    private func closed(_ name: String) {
        closing[name] = nil
        logger.info("ns.closed", ["ns": name])
        if let waiting = loading[name], !waiting.waiters.isEmpty { startLoading(name) }
    }
}
