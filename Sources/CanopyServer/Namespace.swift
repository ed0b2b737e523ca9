// Namespace -- one event's database: the in-memory tree, its SQLite file and the group-commit pipeline.
//
// Durability contract: a write changes `root` at once (so later requests on the loop see it), is persisted in
// the next group-committed transaction (handed to the store's writer thread once per loop pass, before the
// loop sleeps), and is acknowledged only from `whenDurable`, which runs once that transaction is durable (the WAL
// synced, by default). Reads also wait in `whenDurable`. Subscribers are told of a change a little earlier, as
// soon as its transaction is written to the WAL: from then on a crash of the daemon (`kill -9`) cannot take it
// away, only a power loss before the sync that follows within the same commit could. (Firebase itself tells
// listeners before its storage is durable; waiting for the fsync doubled the time from write to event.)
//
// No SQLite on the loop: the tree is loaded on a store thread before the namespace exists (`NamespaceRegistry`),
// the file of a new namespace is created on one (its first batch waits for it, still open), and after a failed
// commit the tree is reloaded on one, after the store's queued writes. While it reloads, new writes go on filling
// the open batch; once the file's tree is back they are applied to it again (their store mutations recomputed),
// and the batch is flushed.

import CanopyCore
import CanopyNet
import CanopyPublish
import CanopyStore
import Dispatch
import Synchronization

/// A namespace's tree and persistence. Loop-confined: every method runs on `loop`.
public final class Namespace {
    public let name: String
    public private(set) var root: Node
    /// The active security rules of this namespace.
    public var policy: any AccessPolicy
    /// Rules source as last set (for `GET /.settings/rules.json`).
    public var rulesSource: String?
    /// Why the namespace refuses service, while its saved rules cannot be loaded (nil otherwise). Every front end
    /// answers its data requests with this message, and `policy` denies everyone, the admin too, until an admin
    /// sets new rules (`NamespaceRegistry.setRules`).
    public internal(set) var rulesFailure: String?
    /// Called once each batch is written to the WAL (before it is acknowledged), with the tree before it and its
    /// operations in commit order (for the realtime fan-out, which must deliver every operation's state, not
    /// only the batch's last one).
    public var onCommit: ((_ before: Node, _ operations: [CommittedOperation]) -> Void)?
    /// Called when an admin action's batch (a publish: thousands of locations) is handed to the store, with what
    /// `onCommit` will be given once it is in the WAL: the fan-out is worked out while SQLite writes the batch,
    /// instead of after, when the answer and the events wait for it.
    var prepareCommit: ((_ before: Node, _ operations: [CommittedOperation]) -> Void)?
    /// Whether anyone is to be told of a batch as soon as it is in the WAL (`onCommit`); nil counts as yes. When
    /// nobody is, the batch is shown with its acknowledgement, after the WAL sync, and the loop is woken once per
    /// durable write instead of twice (see Architecture.md#Durability-and-when-listeners-are-told).
    public var hasSubscribers: (() -> Bool)?

    /// The SQLite file, opened (or created) by `openStore` when the first batch is flushed if it did not exist:
    /// reads, listens and refused writes of a namespace that holds nothing create no file and no threads.
    var store: NamespaceStore?
    /// Cluster mode: the replicated log this node appends the namespace's batches to as its owner (nil in
    /// single-node mode). Every batch is in the log before it is written to `store` and shown.
    var log: NamespaceLog?
    /// Cluster mode: another node owns the namespace now; this object is no longer served (its last writers and
    /// listeners are being sent away).
    var isDeposed = false
    /// Cluster mode, `--replicate`: this node does not own the namespace and serves it from the log; writes are
    /// forwarded to the owner by `forwarder` (NamespaceReplica.swift).
    var replica: NamespaceReplica?
    var forwarder: ReplicaForwarder?
    /// A replica's sessions store their onDisconnect operations here, for the owner should this process die.
    var disconnectStore: ReplicaDisconnectStore?
    /// The owner's URL when the replica was made (REST writes at a replica are proxied there).
    var replicaOwnerURL: String?
    /// A replica read new rules from the log.
    var onReplicatedRules: ((String) -> Void)?
    /// A replica's forwarded write found no owner to take it (`ForwardOutcome.ownerUnavailable`): the registry
    /// drops the replica, resetting its sessions so that their clients resend their writes.
    var onOwnerUnavailable: ((String) -> Void)?
    /// Creates the file of a new namespace on a store thread and calls back there with the open store.
    private let openStore: (@escaping @Sendable (Result<NamespaceStore, StoreError>) -> Void) -> Void
    let loop: EventLoop
    private let logger = Logger(label: "canopy.store")

    /// Mutations and waiters of the batch being filled during this loop pass.
    private var openMutations: [StoreMutation] = []
    private var openWaiters: [(Bool) -> Void] = []
    private var openOperations: [CommittedOperation] = []
    private var openBefore: Node?
    /// Waiters of submitted batches, oldest first; the store completes batches in submission order.
    private var inFlight: [InFlightBatch] = []
    private var needsReload = false
    /// The store is being created or the tree reloaded: the open batch is held (it goes on filling) until then.
    var isHoldingBatches = false
    /// Waiters of the batch whose completion started a reload, with its outcome: they run once the tree is back
    /// (a listen among them must start from the reloaded tree).
    private var reloadWaiters: (waiters: [(Bool) -> Void], ok: Bool) = ([], false)
    /// The creation of the file of a new namespace, under way on a store thread.
    var pendingCreation: PendingStoreCreation?
    /// Counts changes of `root` (each commit, each reload): a computation done off the loop against one version
    /// of the tree may be committed only if the version is still the same (see `AdminAPI`'s publish).
    public private(set) var version: UInt64 = 0
    /// The items its last publish parsed, reused by the next one where unchanged (see `ParsedItems`).
    let parsedItems = ParsedItems()
    /// Parses the draft on the compute thread when a write changed it (see `DraftParsing`).
    lazy var draftParsing = DraftParsing(items: parsedItems)
    /// Runs a draft's parse on the compute thread (set by the registry, as `offLoop`); nil parses no draft ahead.
    var parsesDraftsOn: ((@escaping @Sendable () -> Void) -> Void)?
    /// Runs work on the compute thread (set by the registry): admin actions are built there (`performOffLoop`).
    /// nil builds them on the loop.
    var offLoop: ((@escaping @Sendable () -> Void) -> Void)?
    /// Where its writes, publishes and rule denials are counted (the registry's); nil counts nothing.
    var metrics: ServerMetrics?
    /// Runs before each write `perform` accepts while set: the hub performs this namespace's onDisconnect
    /// operations still waiting in its backlog first, so later writes always land after them.
    var beforeWrite: (() -> Void)?
    /// When the namespace was last used by a request (for closing idle namespaces, least recently used first).
    var lastUsed: UInt64 = 0
    /// A rough size of the tree in memory, in bytes, for the registry's memory budget: measured when the tree is
    /// loaded, then grown by each write's new rows (deletions are not subtracted until the next load).
    var estimatedBytes = 0

    private struct InFlightBatch {
        var waiters: [(Bool) -> Void]
        var before: Node
        var operations: [CommittedOperation]
        /// Tells the store's `visible` callback which batch it is about.
        var id: UInt64
        /// Whether subscribers were told (the batch reached the WAL).
        var shown = false
    }
    private var nextBatchID: UInt64 = 0

    /// - Parameters:
    ///   - store: the namespace's file when it exists; nil for a new namespace.
    ///   - root: the tree loaded from `store` (`Namespace.load(from:)`, on a store thread), or `.empty`.
    ///   - openStore: creates the file of a new namespace, at its first write, off the loop, and calls back (on
    ///     any thread) with the result.
    init(
        name: String, store: NamespaceStore?, root: Node,
        openStore: @escaping (@escaping @Sendable (Result<NamespaceStore, StoreError>) -> Void) -> Void,
        loop: EventLoop, policy: any AccessPolicy
    ) {
        self.name = name
        self.store = store
        self.openStore = openStore
        self.loop = loop
        self.policy = policy
        self.root = root
    }

    /// Replaces the node at each path with the given node and schedules the change for commit.
    ///
    /// Only `perform` (Namespace+Perform.swift) calls this, with writes the policy allowed; the new tree was
    /// computed with `Namespace.applying`. The paths of one operation never overlap (PATCH and merges refuse
    /// overlaps; the publish engine writes disjoint locations), so each path's store mutations follow from the old
    /// and the final tree, without rebuilding the trees in between. An update's `mergeBase` names its location,
    /// every path lying below it: listeners at or above it are then told with one merge event (`m`, SSE `patch`).
    ///
    /// A write that stores nothing (the same value again, a delete of an absent path) is dropped here: it joins no
    /// batch, holds no tree and is fanned out to nobody. Of a multi-path operation, only the paths that change
    /// are kept. Its writer is answered by `whenDurable`, which waits for the writes before it.
    func commit(_ authorized: AuthorizedWrite) {
        loop.assertInLoop()
        let old = root
        let newRoot = authorized.newRoot
        let writes = authorized.writes
        // The mutations go straight into the open batch (no array per write on the hot path).
        if authorized.rowsByWriter, !writes.isEmpty {
            // Rows made early hold for the tree they were made on only (a rebased action lands on a newer one).
            let early = authorized.built.early.flatMap { $0.before === old ? $0 : nil }
            if early == nil { authorized.built.early?.stop() }
            // The paths as the early rows took them off the loop: 5,000 paths are a large allocation, and a large
            // allocation on the loop made glibc first merge every small block freed there since the last one
            // (`malloc_consolidate`), 0–4 ms (median about 3) between a publish's new tree and its writer's start.
            let paths = authorized.built.early?.paths ?? writes.map(\.path)
            let rows = PublishRows(paths: paths, before: old, after: newRoot, early: early)
            if store != nil, !isHoldingBatches {
                return commitAlone(authorized, rows)
            }
            // No file yet, or a reload under way: the batch is held, and its rows are made now.
            let openedWith = openMutations.count
            openMutations += rows.all()
            return finishCommit(authorized, paths: rows.paths, old: old, added: openMutations.count - openedWith)
        }
        let openedWith = openMutations.count
        var paths: [Path]
        if writes.count == 1 {
            openMutations += Namespace.mutations(for: writes[0].path, before: old, after: newRoot)
            paths = [writes[0].path]
        } else {
            paths = []
            for write in writes {
                let before = openMutations.count
                openMutations += Namespace.mutations(for: write.path, before: old, after: newRoot)
                if openMutations.count > before { paths.append(write.path) }
            }
        }
        finishCommit(authorized, paths: paths, old: old, added: openMutations.count - openedWith)
    }

    /// Commits an admin action's writes as a batch of their own, whose rows the store's writer makes while it
    /// writes them (`PublishRows`): the batch filled so far this pass goes to the store first, so batches keep
    /// their order; later writes of this pass start a new one.
    private func commitAlone(_ authorized: AuthorizedWrite, _ rows: PublishRows) {
        let old = root
        flush()
        finishCommit(authorized, paths: rows.paths, old: old, added: rows.estimatedRowCount)
        submitOpenBatch(rows: rows)
    }

    /// Records a committed write whose `added` rows (estimated when the writer makes them) joined the open batch;
    /// none: it changes nothing.
    private func finishCommit(_ authorized: AuthorizedWrite, paths: [Path], old: Node, added: Int) {
        let newRoot = authorized.newRoot
        guard added > 0 else { return }
        if openBefore == nil { openBefore = old }
        estimatedBytes += added * Namespace.bytesPerRow
        root = newRoot
        version &+= 1
        let base = authorized.mergeBase
        let mergeBase = base.flatMap { base in paths.allSatisfy { base.isAncestor(of: $0) } ? base : nil }
        openOperations.append(CommittedOperation(paths: paths, root: newRoot, mergeBase: mergeBase))
        if let parsesDraftsOn, paths.contains(where: Namespace.changesDraft) {
            draftParsing.parse(newRoot.node(at: PublishLayout.pendingContent), on: parsesDraftsOn)
        }
    }

    /// Whether a write at `path` may change the draft (`pendingContent`): it is at, above or below it.
    private static func changesDraft(_ path: Path) -> Bool {
        path.isAncestorOrSelf(of: PublishLayout.pendingContent) || PublishLayout.pendingContent.isAncestor(of: path)
    }

    /// A replica's tree after applying a batch from the log.
    func replaceRoot(with tree: Node) {
        root = tree
        version &+= 1
    }

    /// Runs `body` once everything written so far is durable (`true`), or failed to persist (`false`).
    public func whenDurable(_ body: @escaping (Bool) -> Void) {
        loop.assertInLoop()
        if !openMutations.isEmpty {
            openWaiters.append(body)
        } else if !inFlight.isEmpty {
            inFlight[inFlight.count - 1].waiters.append(body)
        } else {
            body(true)
        }
    }

    /// The operations waiting for this pass's batch (tests: a write that stores nothing must leave none).
    package var openOperationCount: Int { openOperations.count }

    /// Whether the namespace has no file, holds nothing and has no write pending: forgetting it loses nothing.
    var isEmptyWithoutFile: Bool {
        store == nil && root.isEmpty && isIdle
    }

    /// Whether no write is open, in flight or held, and no reload or store creation is under way: closing the
    /// namespace now loses nothing that was not stored.
    var isIdle: Bool {
        openMutations.isEmpty && openWaiters.isEmpty && inFlight.isEmpty && !isHoldingBatches
            && reloadWaiters.waiters.isEmpty && !needsReload
    }


    /// The tree as subscribers have been told of it: every batch fanned out so far, nothing later.
    ///
    /// A new listener must start from this tree, not from `root` at the moment it asked. The store makes a batch
    /// visible (and it is fanned out) as soon as it is in the WAL, which can be before an earlier batch's sync
    /// completes. A listen that waits in `whenDurable` for that earlier batch would otherwise join the group after
    /// the later batch was pushed, and start from a tree without it: that change would never reach it.
    public var shownRoot: Node {
        loop.assertInLoop()
        let next = (inFlight.lastIndex(where: \.shown) ?? -1) + 1
        return next < inFlight.count ? inFlight[next].before : (openBefore ?? root)
    }

    /// Hands the batch filled during this loop pass to the store's writer thread (the before-sleep hook).
    public func flush() {
        guard !openMutations.isEmpty, !isHoldingBatches else { return }
        guard store != nil else {
            createStore()
            return
        }
        submitOpenBatch(rows: nil)
    }

    /// Hands the open batch to the store (which must exist, batches not held), with `rows` made by its writer.
    private func submitOpenBatch(rows: PublishRows?) {
        guard let store else { preconditionFailure("a batch is submitted to an open store") }
        let open = takeOpenBatch()
        nextBatchID += 1
        let id = nextBatchID
        inFlight.append(InFlightBatch(waiters: open.waiters, before: open.before, operations: open.operations, id: id))
        let loop = self.loop
        let bound = LoopBound(self, loop: loop)
        let mutations = open.mutations
        let visibleMayWait = !(hasSubscribers?() ?? true)
        let submit: @Sendable () -> Void = {
            store.submit(
                mutations, rows: rows,
                visible: { loop.execute { bound.value?.batchVisible(id) } },
                visibleMayWaitForSync: visibleMayWait
            ) { result in
                let ok: Bool
                switch result {
                case .success: ok = true
                case .failure(let error):
                    ok = false
                    Logger(label: "canopy.store").error("store.commit_failed", ["error": error.userMessage])
                }
                // An answer (see `EventLoop.executeAnswer`): made durable while the loop fans this batch out, it
                // is written in that pass, ahead of the events (`FlushOrder`), instead of one pass later.
                loop.executeAnswer { bound.value?.batchCompleted(ok: ok) }
            }
        }
        // After the hand-off: the store's writer starts first.
        let prepares = rows != nil
        defer { if prepares { prepareCommit?(open.before, open.operations) } }
        guard let log else { return submit() }
        // Cluster mode: the batch is first stored in the namespace's replicated log; only then is it written to
        // the local file (a cache) and shown to listeners, so nobody sees a write that a failover could lose.
        // Appends complete in order, and a failed one still passes through the store's queue (an empty
        // submission) so that completions reach the loop in batch order.
        let name = self.name
        log.append(operations: open.operations) { result in
            switch result {
            case .success: submit()
            case .failure(let failure):
                Logger(label: "canopy.cluster").error("cluster.append_failed", ["ns": name, "error": "\(failure)"])
                store.submit([]) { _ in loop.execute { bound.value?.batchCompleted(ok: false) } }
            }
        }
    }

    /// The batch filled during this loop pass, and the tree before it; the next pass starts an empty one.
    private func takeOpenBatch() -> (
        mutations: [StoreMutation], waiters: [(Bool) -> Void], operations: [CommittedOperation], before: Node
    ) {
        defer {
            openMutations = []
            openWaiters = []
            openOperations = []
            openBefore = nil
        }
        return (openMutations, openWaiters, openOperations, openBefore ?? root)
    }

    /// Creates the file for a namespace's first batch on a store thread; the batch is held (and goes on filling)
    /// until then. When the file cannot be created the batch fails: nothing can be in flight before a first
    /// batch, and the tree goes back before its waiters run.
    private func createStore() {
        isHoldingBatches = true
        let loop = self.loop
        let bound = LoopBound(self, loop: loop)
        let pending = PendingStoreCreation()
        pendingCreation = pending
        openStore { result in
            pending.finish(result)
            loop.execute { bound.value?.storeCreated(pending) }
        }
    }

    private func storeCreated(_ pending: PendingStoreCreation) {
        guard pendingCreation === pending else { return }
        pendingCreation = nil
        isHoldingBatches = false
        switch pending.wait() {
        case .success(let created):
            store = created
            logger.info("ns.created", ["ns": name])
            flush()
        case .failure(let error):
            logger.error("store.create_failed", ["ns": name, "error": error.userMessage])
            let open = takeOpenBatch()
            root = open.before
            version &+= 1
            for waiter in open.waiters { waiter(false) }
        }
    }

    /// Batch `id` reached the WAL: fan it out. (Batches before it that never became visible failed; their
    /// completion, which reports it, may still be on its way — they are never shown.)
    private func batchVisible(_ id: UInt64) {
        guard let index = inFlight.firstIndex(where: { $0.id == id }), !inFlight[index].shown else { return }
        inFlight[index].shown = true
        onCommit?(inFlight[index].before, inFlight[index].operations)
    }

    /// A completed batch writing at least this many paths is dropped on the release thread (`batchCompleted`).
    private static let pathsReleasedInBackground = 64

    private func batchCompleted(ok: Bool) {
        guard !inFlight.isEmpty else { return }
        // A successful batch was fanned out already: the store calls `visible` before the completion.
        var batch = inFlight.removeFirst()
        if batch.operations.reduce(0, { $0 + $1.paths.count }) >= Self.pathsReleasedInBackground {
            // Often the last reference to the tree before a publish (10,000 attendees' old content). This runs
            // before the pass writes the publish's events (`EventLoop.executeAnswer`): freed here, it would hold
            // them back by as long as the walk takes.
            let old = (batch.before, batch.operations)
            batch.before = .empty
            batch.operations = []
            BackgroundRelease.release(old)
        }
        if !ok {
            needsReload = true
        }
        // The tree goes back to the file before the waiters run: a listen among them starts from `shownRoot`,
        // which must not hold the writes that failed.
        if needsReload && inFlight.isEmpty && openMutations.isEmpty, let store {
            needsReload = false
            reloadWaiters = (batch.waiters, ok)
            reload(from: store)
            return
        }
        for waiter in batch.waiters { waiter(ok) }
    }

    /// Reads the tree back from the file on a store thread, after the store's queued writes (none are in flight:
    /// the open batch is held meanwhile).
    private func reload(from store: NamespaceStore) {
        isHoldingBatches = true
        let loop = self.loop
        let bound = LoopBound(self, loop: loop)
        store.afterQueuedWrites {
            let loaded = Result { try Namespace.loadMeasured(from: store) }
            loop.execute { bound.value?.reloaded(loaded) }
        }
    }

    func reloaded(_ loaded: Result<(root: Node, bytes: Int), any Error>) {
        isHoldingBatches = false
        switch loaded {
        case .success(let (tree, bytes)):
            estimatedBytes = bytes
            let shown = openBefore ?? root
            rebaseOpenBatch(on: tree)
            version &+= 1
            logger.notice("store.reloaded", ["ns": name])
            // Listeners may have been shown parts of the failed writes: when later batches were pushed, or a
            // listen started, before the tree could go back. Tell every listener what differs now.
            onCommit?(shown, [CommittedOperation(paths: [Path.root], root: tree)])
        case .failure(let error):
            logger.error("store.reload_failed", ["ns": name, "error": "\(error)"])
        }
        let (waiters, ok) = reloadWaiters
        reloadWaiters = ([], false)
        for waiter in waiters { waiter(ok) }
        flush()
    }

    /// Applies the open batch's operations again, in order, on `tree` (the file's tree after a failed commit):
    /// their store mutations are recomputed from it, and `root` becomes the result.
    private func rebaseOpenBatch(on tree: Node) {
        var current = tree
        var mutations: [StoreMutation] = []
        var operations: [CommittedOperation] = []
        for operation in openOperations {
            let writes = operation.paths.map { (path: $0, node: operation.root.node(at: $0)) }
            let next = Namespace.applying(writes, to: current)
            for write in writes { mutations += Namespace.mutations(for: write.path, before: current, after: next) }
            operations.append(CommittedOperation(paths: operation.paths, root: next, mergeBase: operation.mergeBase))
            current = next
        }
        if !openOperations.isEmpty { openBefore = tree }
        openMutations = mutations
        openOperations = operations
        root = current
    }

    /// Whether the namespace has a file (is open on a store).
    var hasFile: Bool { store != nil }

    /// Gives up the store of an idle namespace that is being closed (the registry closes it off the loop).
    func detachStore() -> NamespaceStore? {
        precondition(isIdle, "only an idle namespace is closed")
        defer { store = nil }
        return store
    }

    /// Waits for queued batches and closes the file (graceful shutdown: this blocks the loop).
    ///
    /// A new namespace's first batch (an onDisconnect write at shutdown, say) waits here for its file.
    func close() {
        if store == nil && !openMutations.isEmpty && pendingCreation == nil { createStore() }
        if let pending = pendingCreation { storeCreated(pending.waitForResult()) }
        flush()
        store?.flushAndClose()
    }

    // MARK: - Tree helpers

    /// The tree after replacing each path's node in order (pure; used to authorize before committing).
    ///
    /// Many writes (a publish writes below each of 10,000 users) are applied by `Node.merging`, which rebuilds
    /// each node on their way once, instead of each write copying its path from the root. A batch that sets a
    /// priority is applied one write at a time: setting the priority of a node that only a later write of the
    /// batch creates must change nothing, as it does in order.
    public static func applying(_ writes: [(path: Path, node: Node)], to root: Node) -> Node {
        guard writes.count > 1, !writes.contains(where: { $0.path.lastKey == Key.priority }) else {
            return writes.reduce(root) { $0.setting($1.node, at: $1.path) }
        }
        return root.merging(writes)
    }

    /// The store mutations that turn `before` into `after`, where the two differ only at or below `path`
    /// (and in ancestors that became empty or stopped being leaves).
    ///
    /// The replaced region is the shallowest of: an ancestor that was a leaf (it becomes an internal node), an
    /// ancestor that became empty (it is pruned), or `path` itself (its parent for a `.priority` write). When the
    /// region held no rows, its new rows are inserted. Otherwise the old and new regions are compared as two trees
    /// (`appendDifference`), side by side in key order: subtrees that are the same node or hold the same rows cost
    /// no write, a vanished leaf one row delete, a vanished subtree one range delete — overwriting `{seq, sentAt}`
    /// costs two row writes, and republishing a 10,000-row item with a third of its rows changed writes those
    /// rows, not 30,000. The in-memory work is in proportion to the old and new size of the region (less where the
    /// new tree shares nodes with the old, as `Node.reusing` makes it), and the store's to what changed.
    static func mutations(for path: Path, before: Node, after: Node) -> [StoreMutation] {
        var target = path
        if target.lastKey == ".priority", let parent = target.parent { target = parent }
        // Walk both trees down `target` once, stopping at the first ancestor that was a leaf or became empty;
        // `oldNode` and `newNode` end as the old and new nodes at `region`.
        var region = target
        var oldNode = before
        var newNode = after
        for (depth, key) in target.segments.enumerated() {
            if oldNode.isLeaf || newNode.isEmpty {
                region = Path(segments: Array(target.segments.prefix(depth)))
                break
            }
            oldNode = oldNode.child(key)
            newNode = newNode.child(key)
        }
        return mutations(at: region, old: oldNode, new: newNode)
    }

    /// The mutations that turn the rows of `old` at `region` into those of `new`. Called directly (without the new
    /// tree) only for a write whose region is its path: no ancestor was a leaf, and none is emptied that has a row of
    /// its own (`EarlyPublishRows` checks).
    static func mutations(at region: Path, old oldNode: Node, new newNode: Node) -> [StoreMutation] {
        // Nothing differs at the region, so nothing differs at all (values compare as Firebase compares them:
        // rewriting 1 as 1.0 stores nothing). This also keeps an unchanged large region from being rewritten.
        if oldNode == newNode { return [] }
        var out: [StoreMutation] = []
        if oldNode.isEmpty {
            newNode.forEachRecord(under: region.segments) { out.append(StoreMutation($0)) }
            return out
        }
        var at = region.segments
        appendDifference(from: oldNode, to: newNode, at: &at, into: &out)
        return out
    }

    /// Appends the mutations that turn the stored subtree `old` at `path` into `new`: identical subtrees are
    /// skipped, leaves compared as rows (`sameRow`), children walked in key order; a child only `old` has is one
    /// row delete (a leaf) or one range delete (a subtree), one only `new` has its rows; where a leaf becomes an
    /// internal node or back, the subtree is replaced. `path` is restored on return.
    private static func appendDifference(
        from old: Node, to new: Node, at path: inout [String], into out: inout [StoreMutation]
    ) {
        if old === new { return }
        if new.isEmpty {
            if !old.isEmpty { out.append(.deleteSubtree(path: path)) }
            return
        }
        func insert(_ node: Node) { node.forEachRecord(under: path) { out.append(StoreMutation($0)) } }
        if old.isEmpty { return insert(new) }
        if let leaf = new.value, old.isLeaf {
            let record = NodeRecord.leaf(path: path, value: leaf, priority: new.priority)
            if let was = old.value, !sameRow(.leaf(path: path, value: was, priority: old.priority), record) {
                out.append(StoreMutation(record))
            }
            return
        }
        if old.isLeaf || new.isLeaf {
            out.append(.deleteSubtree(path: path))
            return insert(new)
        }
        if !JSONValue.identical(old.priority, new.priority) {
            if let priority = new.priority {
                out.append(.putPriority(path: path, priority: priority))
            } else {
                out.append(.deleteRow(path: path))
            }
        }
        // Two iterators, not indices: an index into a long list descends its tree at every access, and each
        // access copies the child out again (a publish's rows spent half their time there).
        var olds = old.children.makeIterator()
        var news = new.children.makeIterator()
        var a = olds.next()
        var b = news.next()
        while true {
            let order: Int
            switch (a, b) {
            case (nil, nil): return
            case (nil, _): order = 1
            case (_, nil): order = -1
            case (let x?, let y?): order = compareKeys(x.key, y.key)
            }
            if order < 0, let x = a {
                path.append(x.key)
                // A leaf is one row (its priority included); a subtree is a range.
                out.append(x.node.isLeaf ? .deleteRow(path: path) : .deleteSubtree(path: path))
                a = olds.next()
            } else if order > 0, let y = b {
                path.append(y.key)
                insert(y.node)
                b = news.next()
            } else if let x = a, let y = b {
                path.append(y.key)
                appendDifference(from: x.node, to: y.node, at: &path, into: &out)
                a = olds.next()
                b = news.next()
            }
            path.removeLast()
        }
    }

    /// Whether two records would store the same row: same kind, value and priority, numbers of the same type.
    private static func sameRow(_ a: NodeRecord, _ b: NodeRecord) -> Bool {
        switch (a, b) {
        case (.leaf(_, let x, let p), .leaf(_, let y, let q)): JSONValue.identical(x, y) && JSONValue.identical(p, q)
        case (.priority(_, let p), .priority(_, let q)): JSONValue.identical(p, q)
        default: false
        }
    }

    /// Rebuilds the tree from the store's rows (on a store thread: at first use and after a failed commit).
    static func load(from store: NamespaceStore) throws -> Node {
        try loadMeasured(from: store).root
    }

    /// The tree and its estimated size in memory (`bytesPerRow` per row: the node, its key and its value).
    static func loadMeasured(from store: NamespaceStore) throws -> (root: Node, bytes: Int) {
        // Rows come in key order: each subtree is built as soon as it is complete (see `NodeBuilder`).
        let builder = NodeBuilder(sealsCompletedSubtrees: true)
        var rows = 0
        // A priority row keeps its priority in `priority` (its `value` is null): `entry.record` reads it from there.
        try store.loadAll(readingAhead: store.fileBytes >= readAheadBytes) { entry in
            rows += 1
            try builder.add(entry.record)
        }
        return (builder.finish(), rows * bytesPerRow)
    }

    /// Files from this size on are read on a thread of their own while the tree is built
    /// (`NamespaceStore.loadAll(readingAhead:_:)`; Architecture.md#Loading-a-namespace). Smaller files load in a few
    /// hundred milliseconds and would pay a thread each.
    static let readAheadBytes = 8 << 20

    /// The memory estimate of one stored row (a leaf with its key and path): measured as RSS growth per row when
    /// loading trees of small leaves.
    static let bytesPerRow = 160
}

/// The result of creating a store on a store thread, which the loop either gets back through `execute`, or
/// waits for (at shutdown, when the loop runs no more work).
final class PendingStoreCreation: Sendable {
    private let result = Mutex<Result<NamespaceStore, StoreError>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func finish(_ outcome: Result<NamespaceStore, StoreError>) {
        result.withLock { $0 = outcome }
        done.signal()
    }

    /// Waits until `finish` was called; returns self.
    func waitForResult() -> PendingStoreCreation {
        done.wait()
        done.signal()
        return self
    }

    /// The result; call after `finish` (the loop's `execute` or `waitForResult` ordered it).
    func wait() -> Result<NamespaceStore, StoreError> {
        _ = waitForResult()
        return result.withLock { $0! }
    }
}

/// One atomic operation of a committed batch: the paths it wrote and the whole tree right after it.
public struct CommittedOperation: Sendable {
    public let paths: [Path]
    public let root: Node
    /// For an update (merge), its location: every path lies strictly below it. nil for sets and other writes.
    public let mergeBase: Path?

    public init(paths: [Path], root: Node, mergeBase: Path? = nil) {
        self.paths = paths
        self.root = root
        self.mergeBase = mergeBase
    }
}
