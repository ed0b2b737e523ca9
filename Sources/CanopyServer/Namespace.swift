// Namespace -- one event's database: the in-memory tree, its SQLite file and the group-commit pipeline.
//
// Durability contract: a write changes `root` at once (so later requests on the loop see it), is persisted in
// the next group-committed transaction (handed to the store's writer thread once per loop pass, before the
// loop sleeps), and is acknowledged only from `whenDurable`, which runs once that transaction is durable (the WAL
// synced, by default). Reads also wait in `whenDurable`. Subscribers are told of a change a little earlier, as
// soon as its transaction is written to the WAL: from then on a crash of the daemon (`kill -9`) cannot take it
// away, only a power loss before the sync that follows within the same commit could. (Firebase itself tells
// listeners before its storage is durable; waiting for the fsync doubled the time from write to event.)

import CanopyCore
import CanopyNet
import CanopyStore

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

    /// The SQLite file, opened (or created) by `openStore` when the first batch is flushed if it did not exist:
    /// reads, listens and refused writes of a namespace that holds nothing create no file and no threads.
    private var store: NamespaceStore?
    private let openStore: () throws(StoreError) -> NamespaceStore
    private let loop: EventLoop
    private let logger = Logger(label: "canopy.store")

    /// Mutations and waiters of the batch being filled during this loop pass.
    private var openMutations: [StoreMutation] = []
    private var openWaiters: [(Bool) -> Void] = []
    private var openOperations: [CommittedOperation] = []
    private var openBefore: Node?
    /// Waiters of submitted batches, oldest first; the store completes batches in submission order.
    private var inFlight: [InFlightBatch] = []
    private var needsReload = false

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
    ///   - store: the namespace's file when it exists (its tree is loaded from it); nil for a new namespace.
    ///   - openStore: creates the file of a new namespace, at its first write.
    init(
        name: String, store: NamespaceStore?, openStore: @escaping () throws(StoreError) -> NamespaceStore,
        loop: EventLoop, policy: any AccessPolicy
    ) throws {
        self.name = name
        self.store = store
        self.openStore = openStore
        self.loop = loop
        self.policy = policy
        self.root = try store.map(Namespace.load(from:)) ?? .empty
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
        let writes = authorized.writes
        let newRoot = authorized.newRoot
        let base = authorized.mergeBase
        loop.assertInLoop()
        let old = root
        var mutations: [StoreMutation] = []
        var paths: [Path] = []
        for write in writes {
            let changes = Namespace.mutations(for: write.path, before: old, after: newRoot)
            guard !changes.isEmpty else { continue }
            mutations += changes
            paths.append(write.path)
        }
        guard !mutations.isEmpty else { return }
        if openBefore == nil { openBefore = old }
        openMutations += mutations
        root = newRoot
        let mergeBase = base.flatMap { base in paths.allSatisfy { base.isAncestor(of: $0) } ? base : nil }
        openOperations.append(CommittedOperation(paths: paths, root: newRoot, mergeBase: mergeBase))
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
        store == nil && root.isEmpty && openMutations.isEmpty && openWaiters.isEmpty && inFlight.isEmpty
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
        guard !openMutations.isEmpty else { return }
        let open = takeOpenBatch()
        guard let store = storeForFlush() else {
            // The file of a new namespace could not be created. Nothing can be in flight before a first batch:
            // the batch fails here, and the tree goes back before its waiters run.
            root = open.before
            for waiter in open.waiters { waiter(false) }
            return
        }
        nextBatchID += 1
        let id = nextBatchID
        inFlight.append(InFlightBatch(waiters: open.waiters, before: open.before, operations: open.operations, id: id))
        let loop = self.loop
        let bound = LoopBound(self, loop: loop)
        store.submit(
            open.mutations,
            visible: { loop.execute { bound.value?.batchVisible(id) } }
        ) { result in
            let ok: Bool
            switch result {
            case .success: ok = true
            case .failure(let error):
                ok = false
                Logger(label: "canopy.store").error("store.commit_failed", ["error": error.userMessage])
            }
            loop.execute { bound.value?.batchCompleted(ok: ok) }
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

    /// The store, created now for a namespace's first batch; nil when its file cannot be created.
    private func storeForFlush() -> NamespaceStore? {
        if let store { return store }
        do {
            let created = try openStore()
            store = created
            logger.info("ns.created", ["ns": name])
            return created
        } catch {
            logger.error("store.create_failed", ["ns": name, "error": error.userMessage])
            return nil
        }
    }

    /// Batch `id` reached the WAL: fan it out. (Batches before it that never became visible failed; their
    /// completion, which reports it, may still be on its way — they are never shown.)
    private func batchVisible(_ id: UInt64) {
        guard let index = inFlight.firstIndex(where: { $0.id == id }), !inFlight[index].shown else { return }
        inFlight[index].shown = true
        onCommit?(inFlight[index].before, inFlight[index].operations)
    }

    private func batchCompleted(ok: Bool) {
        guard !inFlight.isEmpty else { return }
        // A successful batch was fanned out already: the store calls `visible` before the completion.
        let batch = inFlight.removeFirst()
        if !ok {
            needsReload = true
        }
        // The tree goes back to the file before the waiters run: a listen among them starts from `shownRoot`,
        // which must not hold the writes that failed.
        if needsReload && inFlight.isEmpty && openMutations.isEmpty {
            needsReload = false
            do {
                let memory = root
                root = try store.map(Namespace.load(from:)) ?? .empty
                logger.notice("store.reloaded", ["ns": name])
                // Listeners may have been shown parts of the failed writes: when later batches were pushed, or a
                // listen started, before the tree could go back. Tell every listener what differs now.
                onCommit?(memory, [CommittedOperation(paths: [Path.root], root: root)])
            } catch {
                logger.error("store.reload_failed", ["ns": name, "error": "\(error)"])
            }
        }
        for waiter in batch.waiters { waiter(ok) }
    }

    /// Waits for queued batches and closes the file.
    func close() {
        flush()
        store?.flushAndClose()
    }

    // MARK: - Tree helpers

    /// The tree after replacing each path's node in order (pure; used to authorize before committing).
    public static func applying(_ writes: [(path: Path, node: Node)], to root: Node) -> Node {
        var current = root
        for write in writes { current = current.setting(write.node, at: write.path) }
        return current
    }

    /// The store mutations that turn `before` into `after`, where the two differ only at or below `path`
    /// (and in ancestors that became empty or stopped being leaves).
    ///
    /// The replaced region is the shallowest of: an ancestor that was a leaf (it becomes an internal node), an
    /// ancestor that became empty (it is pruned), or `path` itself (its parent for a `.priority` write). When the
    /// region held no rows, its new rows are inserted. When it held a few (`smallRegionRows`), the old and new rows
    /// are compared: rows that vanished are deleted one by one, changed and new rows are written, unchanged rows
    /// are left alone — overwriting `{seq, sentAt}` costs two row writes, not a range delete and two inserts.
    /// A larger region is deleted as a range and rewritten. Either way a write costs in proportion to the old and
    /// new size of the region.
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
        // Nothing differs at the region, so nothing differs at all (values compare as Firebase compares them:
        // rewriting 1 as 1.0 stores nothing). This also keeps an unchanged large region from being rewritten.
        if oldNode == newNode { return [] }
        var out: [StoreMutation] = []
        // The old region's rows still to be matched; empty when it had none or was deleted as a range.
        var oldRows: [[String]: NodeRecord] = [:]
        if !oldNode.isEmpty {
            if let small = rows(of: oldNode, under: region.segments, limit: smallRegionRows) {
                oldRows = small
            } else {
                out.append(.deleteSubtree(path: region.segments))
            }
        }
        newNode.forEachRecord(under: region.segments) { record in
            if !oldRows.isEmpty, let old = oldRows.removeValue(forKey: record.path), sameRow(old, record) { return }
            out.append(StoreMutation(record))
        }
        // Rows of the old region that the new one does not have.
        for rowPath in oldRows.keys { out.append(.deleteRow(path: rowPath)) }
        return out
    }

    /// Old regions with at most this many rows are compared row by row instead of deleted as a range.
    static let smallRegionRows = 32

    /// The rows of `node` keyed by path, or nil when it has more than `limit`.
    private static func rows(of node: Node, under base: [String], limit: Int) -> [[String]: NodeRecord]? {
        struct TooMany: Error {}
        var rows: [[String]: NodeRecord] = [:]
        do {
            try node.forEachRecord(under: base) { record in
                if rows.count == limit { throw TooMany() }
                rows[record.path] = record
            }
        } catch {
            return nil
        }
        return rows
    }

    /// Whether two records would store the same row: same kind, value and priority, numbers of the same type.
    private static func sameRow(_ a: NodeRecord, _ b: NodeRecord) -> Bool {
        switch (a, b) {
        case (.leaf(_, let x, let p), .leaf(_, let y, let q)): identical(x, y) && identical(p, q)
        case (.priority(_, let p), .priority(_, let q)): identical(p, q)
        default: false
        }
    }

    private static func identical(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (.bool(let x)?, .bool(let y)?): x == y
        case (.int(let x)?, .int(let y)?): x == y
        case (.double(let x)?, .double(let y)?): x.bitPattern == y.bitPattern
        case (.string(let x)?, .string(let y)?): JSONKey.bytesEqual(x, y)
        default: false
        }
    }

    /// Rebuilds the tree from the store's rows (called at start-up and after a failed commit).
    static func load(from store: NamespaceStore) throws -> Node {
        let builder = NodeBuilder()
        // A priority row keeps its priority in `priority` (its `value` is null): `entry.record` reads it from there.
        try store.loadAll { entry in try builder.add(entry.record) }
        return builder.build()
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
