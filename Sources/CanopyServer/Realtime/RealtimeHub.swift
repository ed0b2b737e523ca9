// RealtimeHub -- fans committed changes out to subscribers, and re-checks them when rules or tokens change.

import CanopyCore
import CanopyNet
import CanopyStore

/// All realtime subscriptions of a daemon: SSE streams and WebSocket listens. Loop-confined.
final class RealtimeHub: RealtimeService {
    unowned let context: ServerContext
    let loop: EventLoop
    private var trees: [ObjectIdentifier: ListenerTree<ListenGroup>] = [:]
    /// Per namespace, the fan-out of its last admin batch, worked out while the store writes it.
    private var prepared: [ObjectIdentifier: PreparedFanOut] = [:]
    /// Groups by namespace, location and query, so equal subscriptions share serialization.
    private var groupsByKey: [String: ListenGroup] = [:]
    private var sessions: [ObjectIdentifier: WireSession] = [:]
    /// WebSockets whose namespace is loading (`WireEarlySession`).
    private var earlySessions: [ObjectIdentifier: WireEarlySession] = [:]
    private let logger = Logger(label: "canopy.realtime")
    /// The `/.lp` long-polling transport.
    private(set) lazy var longPoll = LongPollEndpoint(hub: self)
    /// Interval between SSE keep-alive events.
    var keepAliveMilliseconds: Int64 = 30_000
    /// Wire listens of all sessions, joined or waiting to join: the budget above each connection's
    /// (`ServerConfiguration.maxListens`). Kept by `WireSession`.
    var listenCount = 0
    /// onDisconnect operations queued by open sessions or waiting in `disconnectBacklog`
    /// (`ServerConfiguration.maxOnDisconnectOperations`). Kept by `WireSession` and `runDisconnectBacklog`.
    var onDisconnectCount = 0
    /// onDisconnect operations of closed sessions not yet performed, oldest first from `backlogStart`.
    /// An entry becomes nil once performed out of turn (`performBacklog(of:)`).
    private var disconnectBacklog: [(namespace: Namespace, operation: DisconnectOperation)?] = []
    /// Backlog entries not yet performed, per namespace: while a namespace has some, a write to it performs them
    /// first (`Namespace.beforeWrite`), so a client that reconnects at once never has its new writes overwritten
    /// by its own older onDisconnect operations (the presence pattern: `onDisconnect().set(false)`, then `true`).
    private var backlogPerNamespace: [ObjectIdentifier: Int] = [:]
    /// The backlog runner is performing an entry (its own writes must not trigger `beforeWrite`).
    private var isRunningBacklog = false
    private var backlogStart = 0
    /// A chunk of the backlog is running or waiting to be durable; the next one starts after it.
    private var backlogIsBusy = false
    /// Shutting down: the backlog runs to the end at once, while the namespaces are still open.
    private var runsBacklogAtOnce = false
    /// onDisconnect operations performed per chunk, so a connection with thousands of them cannot stall the
    /// others (each costs a build, a rules check and a commit; 200,000 at once held the loop for 1.3 s). The next
    /// chunk starts once this one is durable: the store is never handed more than one chunk's batch at a time,
    /// so the loop never waits for a full store queue either.
    static let disconnectOperationsPerPass = 256

    init(context: ServerContext, loop: EventLoop) {
        self.context = context
        self.loop = loop
    }

    /// Wires a newly opened namespace's commits to the fan-out.
    func attach(_ namespace: Namespace) {
        namespace.onCommit = { [weak self, weak namespace] before, operations in
            guard let self, let namespace else { return }
            self.committed(namespace, before: before, operations: operations)
        }
        namespace.prepareCommit = { [weak self, weak namespace] before, operations in
            guard let self, let namespace else { return }
            self.prepare(namespace, before: before, operations: operations)
        }
        namespace.hasSubscribers = { [weak self, weak namespace] in
            guard let self, let namespace else { return false }
            return !(self.trees[ObjectIdentifier(namespace)]?.isEmpty ?? true)
        }
    }

    // MARK: - WebSocket

    func handles(_ request: HTTPRequest) -> Bool { request.path == "/.ws" || request.path == "/.lp" }

    func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        if request.path == "/.lp" {
            longPoll.handle(request, responder)
            return
        }
        var params: [String: String] = [:]
        for item in request.query { params[item.name] = item.value }
        let name: String
        let namespace: Namespace
        do {
            name = try context.namespaceName(request, params: params)
            // A session on a namespace whose rules fail opens, and refuses each data request (see `WireSession`).
            namespace = try context.namespace(name, whileRulesFail: true)
        } catch {
            responder.respond(.error(error))
            return
        }
        guard let socket = responder.upgradeToWebSocket(request) else { return }
        let host = request.header("host") ?? "\(context.configuration.host):\(context.configuration.port)"
        if let transportSession = params[Wire.Handshake.session], !transportSession.isEmpty {
            longPoll.upgrade(socket, handshakeID: transportSession, namespace: namespace, host: host)
            return
        }
        let session = WireSession(hub: self, namespace: namespace, socket: socket)
        sessions[ObjectIdentifier(session)] = session
        session.start(host: host)
    }

    /// Opens a WebSocket or a long-poll session at once when its namespace is loading (`WireEarlySession`), and
    /// answers a poll of a long-poll session so opened; false (nothing done) for every other request, which waits
    /// for the load as before: an upgrade from long polling, cluster mode.
    func openEarly(_ request: HTTPRequest, _ responder: HTTPResponder) -> Bool {
        let registry = context.registry
        guard registry.cluster == nil else { return false }
        var params: [String: String] = [:]
        if request.path == "/.lp" {
            guard let parsed = try? LongPollRequest.parse(request.query, limits: longPoll.limits) else { return false }
            if longPoll.answersWithoutLoad(parsed, request, responder) { return true }
            guard case .start(let callbackID) = parsed else { return false }
            // Long polling reads its parameters first-wins (`LongPollEndpoint.start`), WebSockets last-wins.
            for item in request.query where params[item.name] == nil { params[item.name] = item.value }
            return openEarly(request, responder, params: params) { [weak self] name, host in
                self?.longPoll.startEarly(request, callbackID: callbackID, name: name, host: host, responder)
            }
        }
        guard request.path == "/.ws", request.header("upgrade")?.lowercased() == "websocket" else { return false }
        for item in request.query { params[item.name] = item.value }
        guard params[Wire.Handshake.session]?.isEmpty ?? true else { return false }
        return openEarly(request, responder, params: params) { [weak self] name, host in
            guard let self, let socket = responder.upgradeToWebSocket(request) else { return nil }
            let early = WireEarlySession(hub: self, name: name, socket: socket, host: host)
            early.start()
            return early
        }
    }

    /// Keeps the early session `make` creates and starts for `name` (nil: it answered the request itself) once the
    /// load has opened the store, if the namespace is loading; false when it is not.
    private func openEarly(
        _ request: HTTPRequest, _ responder: HTTPResponder, params: [String: String],
        make: @escaping (_ name: String, _ host: String) -> WireEarlySession?
    ) -> Bool {
        let registry = context.registry
        guard let name = try? context.namespaceName(request, params: params), DataDirectory.isValidNamespace(name),
            registry.mustWait(for: name), registry.closing[name] == nil, registry.open[name] == nil
        else { return false }
        // The session opens only once the load has opened the store, so a namespace that cannot be opened (a lost
        // WAL, a damaged file) is still refused with 503 and its reason, before any session exists.
        let upgraded = EarlyUpgrade()
        registry.whenOpen(name, create: false) { [weak self] result in
            if let early = upgraded.session { return early.opened(result) }
            // No early session (the load ended before the store was reported open, or failed): as
            // `ServerContext.whenNamespaceReady` goes on.
            guard let self, !responder.hasAnswered else { return }
            switch result {
            case .success: self.handle(request, responder)
            case .failure(let error): ServerContext.answerLoadFailure(error, responder)
            }
        }
        registry.whenStoreOpened(name) { [weak self] opened in
            guard let self, opened, !responder.hasAnswered, registry.open[name] == nil else { return }
            let host = request.header("host") ?? "\(self.context.configuration.host):\(self.context.configuration.port)"
            guard let early = make(name, host) else { return }
            upgraded.session = early
            self.earlySessions[ObjectIdentifier(early)] = early
        }
        return true
    }

    func earlySessionEnded(_ early: WireEarlySession) {
        earlySessions[ObjectIdentifier(early)] = nil
    }

    /// Registers a session opened by another transport (long polling).
    func sessionOpened(_ session: WireSession) {
        sessions[ObjectIdentifier(session)] = session
    }

    func sessionClosed(_ session: WireSession) {
        sessions[ObjectIdentifier(session)] = nil
    }

    // MARK: - SSE

    func startEventStream(_ request: DataRequest, _ responder: HTTPResponder, early: EarlyTree?) throws {
        let query = try QuerySpec.fromREST(request.params)
        let namespace: Namespace?
        var sentValue: Node?
        if let early {
            // The namespace is loading (RESTEarlyRead): the first `put` comes from the file, decided by the saved
            // rules against what was read; the stream joins its group once the tree is loaded.
            namespace = nil
            let now = context.configuration.clock.nowMilliseconds()
            switch early.listenStart(at: request.path, query: query, as: request.identity, in: request.namespaceName, now: now) {
            case nil: throw EarlyReadNeedsTree()
            case .denied?:
                context.registry.metrics.countDenial(.read(query: query))
                throw RESTError.permissionDenied
            case .value(let value)?: sentValue = value
            }
        } else {
            let open = try context.namespace(request.namespaceName)
            guard allowed(request.identity, read: request.path, query: query, in: open) else {
                throw RESTError.permissionDenied
            }
            namespace = open
        }
        let http = responder.startStream(
            status: 200,
            headers: [
                ("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache"),
                ("Access-Control-Allow-Origin", "*"),
            ])
        let subscriber = EventStream(stream: http, identity: request.identity)
        http.onClose = { [weak self, weak subscriber] in
            guard let self, let subscriber else { return }
            self.remove(subscriber)
        }
        if let namespace {
            follow(namespace, request, query: query, subscriber, sent: nil)
        } else if let sentValue {
            http.send(EventStream.format("put", ["path": "/", "data": sentValue.json()]))
            context.registry.metrics.sseMessagesSent &+= 1
            let sentHash = sentValue.hash
            // Holds the subscriber until the load ends (nothing else does before it joins its group).
            context.registry.whenOpen(request.namespaceName, create: false) { [weak self] result in
                guard let self, !http.isClosed else { return }
                guard case .success = result, let namespace = try? self.context.namespace(request.namespaceName)
                else { return self.close(subscriber) }
                self.follow(namespace, request, query: query, subscriber, sent: sentHash)
            }
        }
        scheduleKeepAlive(subscriber)
        if case .user(_, let expiresAt?) = request.identity {
            // Revoked when the token stops being honoured (exp + skew), as a wire session is.
            let revokedAt = context.credentials.revocationTime(expiresAt)
            // Saturating: `exp` is the client's number, as far from now as Int64 allows.
            let delay = revokedAt.subtractingSaturated(context.configuration.clock.nowMilliseconds())
            subscriber.expiry = loop.schedule(afterMilliseconds: delay) { [weak self, weak subscriber] in
                guard let self, let subscriber else { return }
                subscriber.stream.send(EventStream.formatRaw("auth_revoked", "credential is no longer valid"))
                self.close(subscriber)
            }
        }
    }

    /// Joins the stream to its group once everything written before is durable (as a wire listen does), and
    /// sends the value it starts from, unless that is the value `sent` (the hash of the `put` sent while the
    /// namespace loaded).
    private func follow(
        _ namespace: Namespace, _ request: DataRequest, query: QuerySpec?, _ subscriber: EventStream, sent: String?
    ) {
        let http = subscriber.stream
        namespace.whenDurable { [weak self] _ in
            guard let self, !http.isClosed else { return }
            // The rules may have changed meanwhile (a stream's identity is fixed).
            guard self.allowed(request.identity, read: request.path, query: query, in: namespace) else {
                http.send(EventStream.format("cancel", "Permission denied"))
                self.close(subscriber)
                return
            }
            let group = self.group(namespace: namespace, path: request.path, query: query)
            subscriber.group = group
            group.sse.add(subscriber)
            let value = group.currentValue(in: namespace.shownRoot)
            guard value.hash != sent else { return }
            http.send(EventStream.format("put", ["path": "/", "data": value.json()]))
            self.context.registry.metrics.sseMessagesSent &+= 1
        }
    }

    private func scheduleKeepAlive(_ subscriber: EventStream) {
        subscriber.keepAlive = loop.schedule(afterMilliseconds: keepAliveMilliseconds) {
            [weak self, weak subscriber] in
            guard let self, let subscriber, !subscriber.stream.isClosed else { return }
            subscriber.stream.send(EventStream.formatRaw("keep-alive", "null"))
            self.scheduleKeepAlive(subscriber)
        }
    }

    private func remove(_ subscriber: EventStream) {
        subscriber.keepAlive?.cancel()
        subscriber.expiry?.cancel()
        guard let group = subscriber.group else { return }
        subscriber.group = nil
        group.sse.remove(subscriber)
        release(group)
    }

    private func close(_ subscriber: EventStream) {
        remove(subscriber)
        subscriber.stream.close()
    }

    // MARK: - groups

    /// The shared group for (namespace, path, query), created on first use.
    func group(namespace: Namespace, path: Path, query: QuerySpec?) -> ListenGroup {
        let key = "\(namespace.name)\u{0}\(path)\u{0}\(query?.wireObject().serialized() ?? "")"
        if let existing = groupsByKey[key] { return existing }
        let created = ListenGroup(namespace: namespace, path: path, query: query, key: key)
        groupsByKey[key] = created
        tree(for: namespace).insert(created, at: path)
        return created
    }

    /// Forgets a group once its last listener left.
    func release(_ group: ListenGroup) {
        guard group.isEmpty, groupsByKey[group.key] === group else { return }
        groupsByKey[group.key] = nil
        let id = ObjectIdentifier(group.namespace)
        guard let tree = trees[id] else { return }
        tree.remove(group, at: group.path)
        // An empty tree goes too: the registry may forget its namespace, and the identifier be reused.
        if tree.isEmpty {
            trees[id] = nil
            prepared[id] = nil
        }
    }

    private func tree(for namespace: Namespace) -> ListenerTree<ListenGroup> {
        let id = ObjectIdentifier(namespace)
        if let existing = trees[id] { return existing }
        let created = ListenerTree<ListenGroup>()
        trees[id] = created
        return created
    }

    /// Whether `identity` may read `path` (through `query`) in `namespace` now.
    func allowed(_ identity: Identity, read path: Path, query: QuerySpec?, in namespace: Namespace) -> Bool {
        namespace.authorizeRead(path, query: query, as: identity, now: context.configuration.clock.nowMilliseconds())
            .allowed
    }

    // MARK: - fan-out

    /// A batch's updates per group, in delivery order, worked out before the batch is visible: they hold for the
    /// listener tree as it was, so only while no group was inserted since (a group that left gets nothing sent; a
    /// listener that joined an existing group is sent its group's updates as it would have been).
    private struct PreparedFanOut {
        let before: Node
        /// The tree after the batch's last operation (it tells the batch apart from any other).
        let after: Node
        let tree: ListenerTree<ListenGroup>
        let insertions: UInt64
        let groups: [GroupUpdates]
    }

    /// One group's updates of a batch, and its wire pushes (`WireMessages.dataMessagePrefixes`) once serialized.
    private struct GroupUpdates {
        let group: ListenGroup
        let updates: [ListenUpdate]
        var prefixes: [[UInt8]]? = nil
    }

    /// Works out the fan-out of a batch the store is about to write (`Namespace.prepareCommit`).
    private func prepare(_ namespace: Namespace, before: Node, operations: [CommittedOperation]) {
        let id = ObjectIdentifier(namespace)
        guard let tree = trees[id], let last = operations.last else {
            prepared[id] = nil
            return
        }
        var groups = Self.updates(in: tree, before: before, operations: operations)
        for index in groups.indices where !groups[index].group.wire.isEmpty {
            let prefixes = WireMessages.dataMessagePrefixes(groups[index].updates)
            context.registry.metrics.pushSerializations &+= prefixes.count
            groups[index].prefixes = prefixes
        }
        prepared[id] = PreparedFanOut(
            before: before, after: last.root, tree: tree, insertions: tree.insertions, groups: groups)
    }

    private func committed(_ namespace: Namespace, before: Node, operations: [CommittedOperation]) {
        let id = ObjectIdentifier(namespace)
        let ready = prepared.removeValue(forKey: id)
        guard let tree = trees[id] else { return }
        let groups: [GroupUpdates]
        if let ready, ready.tree === tree, ready.insertions == tree.insertions, ready.before === before,
            ready.after === operations.last?.root
        {
            groups = ready.groups
        } else {
            groups = Self.updates(in: tree, before: before, operations: operations)
        }
        for item in groups { deliver(item.updates, to: item.group, prefixes: item.prefixes) }
    }

    /// Each group's updates for `operations` applied to `before`, groups in the order they are first affected.
    private static func updates(
        in tree: ListenerTree<ListenGroup>, before: Node, operations: [CommittedOperation]
    ) -> [GroupUpdates] {
        // Every operation of the batch is delivered in commit order, each with the state right after it, so no
        // change is skipped even when one loop pass commits several writes to the same place. Each group gets only
        // the paths of an operation that overlap it (a publish touches thousands of locations).
        var order: [ListenGroup] = []
        var updatesByGroup: [ObjectIdentifier: [ListenUpdate]] = [:]
        func collect(_ updates: [ListenUpdate], for group: ListenGroup) {
            if updates.isEmpty { return }
            let id = ObjectIdentifier(group)
            if updatesByGroup[id] == nil { order.append(group) }
            updatesByGroup[id, default: []] += updates
        }
        var groupOrder: [ListenGroup] = []
        var pathsByGroup: [ObjectIdentifier: [Path]] = [:]
        var previous = before
        var locations = ListenGroup.Locations()
        for operation in operations {
            defer { previous = operation.root }
            if operation.paths.count == 1 {
                // One path (every `p`, single-child merges): each overlapping group gets exactly that path.
                for group in tree.groups(overlapping: operation.paths[0]) {
                    collect(
                        group.updates(
                            of: operation, before: previous, changedPaths: operation.paths, locations: &locations),
                        for: group)
                }
                continue
            }
            groupOrder.removeAll(keepingCapacity: true)
            pathsByGroup.removeAll(keepingCapacity: true)
            tree.forEachGroup(overlapping: operation.paths) { group, path in
                let id = ObjectIdentifier(group)
                if pathsByGroup[id] == nil { groupOrder.append(group) }
                pathsByGroup[id, default: []].append(path)
            }
            for group in groupOrder {
                let paths = pathsByGroup[ObjectIdentifier(group)]!
                collect(
                    group.updates(of: operation, before: previous, changedPaths: paths, locations: &locations),
                    for: group)
            }
        }
        return order.map { GroupUpdates(group: $0, updates: updatesByGroup[ObjectIdentifier($0)]!) }
    }

    /// Sends one group's updates to its listeners: serialized once, and for wire listens framed once per tag (all
    /// untagged listens share one encoding), so each connection only copies finished frames into its output.
    /// - Parameter serialized: the group's wire pushes, when they were serialized before (`prepare`).
    private func deliver(_ updates: [ListenUpdate], to group: ListenGroup, prefixes serialized: [[UInt8]]? = nil) {
        if !group.sse.isEmpty {
            let bytes = group.sseBytes(updates)
            context.registry.metrics.pushSerializations &+= updates.count
            for subscriber in group.sse { subscriber.stream.send(bytes) }
            context.registry.metrics.sseMessagesSent &+= group.sse.count
        }
        guard !group.wire.isEmpty else { return }
        let prefixes: [[UInt8]]
        if let serialized {
            prefixes = serialized
        } else {
            prefixes = WireMessages.dataMessagePrefixes(updates)
            context.registry.metrics.pushSerializations &+= prefixes.count
        }
        var untagged: WireMessages?
        var tagged: [Int64: WireMessages] = [:]
        for listen in group.wire {
            // A send can close a session (output overflow), which drops its listens from this group.
            guard listen.isActive else { continue }
            let messages: WireMessages
            if let tag = listen.tag {
                if let known = tagged[tag] {
                    messages = known
                } else {
                    messages = WireMessages(closing: prefixes, tag: tag)
                    tagged[tag] = messages
                }
            } else if let known = untagged {
                messages = known
            } else {
                messages = WireMessages(closing: prefixes, tag: nil)
                untagged = messages
            }
            // Borrowed without a retain: `isActive` guarantees the session is alive (see `WireListen`).
            Unmanaged.passUnretained(listen.session)._withUnsafeGuaranteedRef { $0.send(messages) }
        }
    }

    /// The daemon is draining: long-poll sessions end now; each WebSocket session is told to reconnect once
    /// everything written to its namespace so far is durable, so the acknowledgements of its writes in flight reach
    /// it before the reset; then `done` runs. SSE streams end with the server's graceful shutdown after it. From now
    /// on onDisconnect operations run to the end as their sessions close, while the namespaces are still open.
    func shuttingDown(then done: @escaping () -> Void) {
        runsBacklogAtOnce = true
        runDisconnectBacklog()
        longPoll.terminateAll()
        for early in Array(earlySessions.values) { early.drain() }
        var namespaces: [ObjectIdentifier: Namespace] = [:]
        for session in sessions.values { namespaces[ObjectIdentifier(session.namespace)] = session.namespace }
        var remaining = namespaces.count
        guard remaining > 0 else { return done() }
        for namespace in namespaces.values {
            namespace.whenDurable { [weak self] _ in
                if let self {
                    for session in Array(self.sessions.values)
                    where session.namespace === namespace && session.isWebSocket {
                        session.drain()
                    }
                }
                remaining -= 1
                if remaining == 0 { done() }
            }
        }
    }

    /// Cluster mode: `namespace` is no longer served here (another node owns it). Its wire sessions are reset,
    /// so their clients reconnect and are sent to the owner; its event streams end (their clients reconnect too).
    func namespaceDeposed(_ namespace: Namespace) {
        for session in Array(sessions.values) where session.namespace === namespace { session.drain() }
        for group in Array(groupsByKey.values) where group.namespace === namespace {
            for subscriber in Array(group.sse) { close(subscriber) }
        }
    }

    // MARK: - onDisconnect

    /// Performs a closed session's onDisconnect operations, in order and after those of sessions that closed
    /// before, each through the write pipeline as the identity that queued it. At most
    /// `disconnectOperationsPerPass` run in one loop pass; the rest follow in the next passes, so other
    /// connections are served in between. (A session with few operations has them performed before this returns,
    /// unless older ones are still waiting.)
    func runDisconnectOperations(_ operations: [DisconnectOperation], in namespace: Namespace) {
        guard !operations.isEmpty else { return }
        for operation in operations { disconnectBacklog.append((namespace, operation)) }
        backlogPerNamespace[ObjectIdentifier(namespace), default: 0] += operations.count
        if namespace.beforeWrite == nil {
            namespace.beforeWrite = { [weak self, unowned namespace] in self?.performBacklog(of: namespace) }
        }
        guard !backlogIsBusy else { return }
        runDisconnectBacklog()
    }

    /// Performs every backlog entry of `namespace` now, in order (a write to it arrived; see `backlogPerNamespace`).
    private func performBacklog(of namespace: Namespace) {
        guard !isRunningBacklog else { return }
        namespace.beforeWrite = nil
        let id = ObjectIdentifier(namespace)
        guard backlogPerNamespace[id] != nil else { return }
        for index in backlogStart..<disconnectBacklog.count {
            guard let entry = disconnectBacklog[index], entry.namespace === namespace else { continue }
            disconnectBacklog[index] = nil
            perform(entry.operation, in: namespace, endsChunk: false)
        }
    }

    /// Performs one backlog entry through the write pipeline.
    private func perform(_ operation: DisconnectOperation, in namespace: Namespace, endsChunk: Bool) {
        onDisconnectCount -= 1
        let id = ObjectIdentifier(namespace)
        if let left = backlogPerNamespace[id], left > 1 {
            backlogPerNamespace[id] = left - 1
        } else {
            backlogPerNamespace[id] = nil
            namespace.beforeWrite = nil
        }
        let now = context.configuration.clock.nowMilliseconds()
        isRunningBacklog = true
        defer { isRunningBacklog = false }
        namespace.perform(operation.write, as: operation.identity, now: now) { [weak self, logger] result in
            if case .failure(let error) = result {
                logger.debug("wire.ondisconnect_failed", ["path": operation.path.description, "error": error.code])
            }
            operation.done?()
            // The chunk's last operation is durable (or failed): the next chunk, in a later pass (a refusal
            // answers at once, and must not recurse).
            guard endsChunk, let self else { return }
            _ = self.loop.schedule(afterMilliseconds: 0) { [weak self] in self?.runDisconnectBacklog() }
        }
    }

    private func runDisconnectBacklog() {
        backlogIsBusy = false
        var budget = runsBacklogAtOnce ? Int.max : Self.disconnectOperationsPerPass
        while backlogStart < disconnectBacklog.count, budget > 0 {
            let entry = disconnectBacklog[backlogStart]
            backlogStart += 1
            guard let (namespace, operation) = entry else { continue }  // performed out of turn
            budget -= 1
            let endsChunk = budget == 0 && backlogStart < disconnectBacklog.count
            if endsChunk { backlogIsBusy = true }
            perform(operation, in: namespace, endsChunk: endsChunk)
        }
        if backlogStart == disconnectBacklog.count {
            disconnectBacklog = []
            backlogStart = 0
        } else if backlogStart >= 4096 {
            disconnectBacklog.removeFirst(backlogStart)
            backlogStart = 0
        }
    }

    /// The namespace's rules changed: cancel every subscription that may no longer read.
    func rulesChanged(in namespace: Namespace) {
        guard let tree = trees[ObjectIdentifier(namespace)] else { return }
        for group in tree.allGroups() {
            for subscriber in group.sse
            where !allowed(subscriber.identity, read: group.path, query: group.query, in: namespace) {
                subscriber.stream.send(EventStream.format("cancel", "Permission denied"))
                close(subscriber)
            }
        }
        for session in sessions.values where session.namespace === namespace { session.recheckListens() }
    }
}

extension RealtimeHub {
    /// What the realtime layer holds now, for the metrics export.
    struct Gauges {
        var webSocketSessions = 0
        var longPollSessions = 0
        var eventStreams = 0
        var wireListens = 0
    }

    /// Clients per namespace: wire sessions and event streams (cluster load, once a second; not on the hot path).
    func clientsPerNamespace() -> [String: Int] {
        var clients: [String: Int] = [:]
        for session in sessions.values { clients[session.namespace.name, default: 0] += 1 }
        for group in groupsByKey.values where !group.sse.isEmpty {
            clients[group.namespace.name, default: 0] += group.sse.count
        }
        return clients
    }

    /// Counts sessions, streams and listens (at scrape time, not on the hot path).
    var gauges: Gauges {
        var gauges = Gauges()
        for session in sessions.values {
            if session.isWebSocket { gauges.webSocketSessions += 1 } else { gauges.longPollSessions += 1 }
        }
        for early in earlySessions.values {
            if early.socket is WebSocketConnection { gauges.webSocketSessions += 1 } else { gauges.longPollSessions += 1 }
        }
        for group in groupsByKey.values {
            gauges.eventStreams += group.sse.count
            gauges.wireListens += group.wire.count
        }
        return gauges
    }
}

/// The session opened while its namespace loads, once it is made (`RealtimeHub.openEarly`).
private final class EarlyUpgrade {
    weak var session: WireEarlySession?
}
