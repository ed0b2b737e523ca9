// RealtimeHub -- fans committed changes out to subscribers, and re-checks them when rules or tokens change.

import CanopyCore
import CanopyNet

/// All realtime subscriptions of a daemon. Loop-confined.
final class RealtimeHub: RealtimeService {
    unowned let context: ServerContext
    let loop: EventLoop
    private var trees: [ObjectIdentifier: ListenerTree<StreamGroup>] = [:]
    /// Groups by namespace, location and query, so equal subscriptions share serialization.
    private var groupsByKey: [String: StreamGroup] = [:]
    private let logger = Logger(label: "canopy.realtime")
    /// Interval between SSE keep-alive events.
    var keepAliveMilliseconds: Int64 = 30_000

    init(context: ServerContext, loop: EventLoop) {
        self.context = context
        self.loop = loop
    }

    /// Wires a newly opened namespace's commits to the fan-out.
    func attach(_ namespace: Namespace) {
        namespace.onCommit = { [weak self, weak namespace] before, after, paths in
            guard let self, let namespace else { return }
            self.committed(namespace, before: before, after: after, changedPaths: paths)
        }
    }

    func handles(_ request: HTTPRequest) -> Bool { false }

    func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        responder.respond(.error(RESTError(404, "Not found.")))
    }

    // MARK: - SSE

    func startEventStream(_ request: DataRequest, _ responder: HTTPResponder) throws {
        let query = try QuerySpec.fromRESTChecked(request.params)
        guard let namespace = try context.namespace(request.namespaceName, create: true) else {
            throw RESTError(500, "Namespace unavailable.")
        }
        let decision = namespace.policy.decide(
            AccessRequest(
                identity: request.identity, namespace: namespace.name, path: request.path,
                operation: .read(query: query), oldRoot: namespace.root, newRoot: nil, now: request.now))
        guard decision.allowed else { throw RESTError.permissionDenied }

        let http = responder.startStream(
            status: 200,
            headers: [
                ("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache"),
                ("Access-Control-Allow-Origin", "*"),
            ])
        let subscriber = EventStream(stream: http, identity: request.identity)
        let group = self.group(namespace: namespace, path: request.path, query: query)
        subscriber.group = group
        group.streams.append(subscriber)
        http.onClose = { [weak self, weak subscriber] in
            guard let self, let subscriber else { return }
            self.remove(subscriber)
        }
        let snapshot = namespace.root.node(at: request.path)
        namespace.whenDurable { _ in
            let value = query.map { $0.window(of: snapshot) } ?? snapshot
            http.send(EventStream.format("put", ["path": "/", "data": value.json()]))
        }
        scheduleKeepAlive(subscriber)
        if case .user(_, let expiresAt?) = request.identity {
            let delay = max(0, expiresAt - context.configuration.clock.nowMilliseconds())
            subscriber.expiry = loop.schedule(afterMilliseconds: delay) { [weak self, weak subscriber] in
                guard let self, let subscriber else { return }
                subscriber.stream.send(EventStream.formatRaw("auth_revoked", "credential is no longer valid"))
                self.close(subscriber)
            }
        }
        logger.debug("sse.open", ["ns": namespace.name, "path": request.path.description])
    }

    private func scheduleKeepAlive(_ subscriber: EventStream) {
        subscriber.keepAlive = loop.schedule(afterMilliseconds: keepAliveMilliseconds) {
            [weak self, weak subscriber] in
            guard let self, let subscriber, !subscriber.stream.isClosed else { return }
            subscriber.stream.send(EventStream.formatRaw("keep-alive", "null"))
            self.scheduleKeepAlive(subscriber)
        }
    }

    private func group(namespace: Namespace, path: Path, query: QuerySpec?) -> StreamGroup {
        let key = "\(namespace.name)\u{0}\(path)\u{0}\(query?.wireObject().serialized() ?? "")"
        if let existing = groupsByKey[key] { return existing }
        let created = StreamGroup(namespace: namespace, path: path, query: query)
        groupsByKey[key] = created
        tree(for: namespace).insert(created, at: path)
        return created
    }

    private func tree(for namespace: Namespace) -> ListenerTree<StreamGroup> {
        let id = ObjectIdentifier(namespace)
        if let existing = trees[id] { return existing }
        let created = ListenerTree<StreamGroup>()
        trees[id] = created
        return created
    }

    private func remove(_ subscriber: EventStream) {
        subscriber.keepAlive?.cancel()
        subscriber.expiry?.cancel()
        guard let group = subscriber.group else { return }
        subscriber.group = nil
        group.streams.removeAll { $0 === subscriber }
        if group.streams.isEmpty {
            let key = "\(group.namespace.name)\u{0}\(group.path)\u{0}\(group.query?.wireObject().serialized() ?? "")"
            groupsByKey[key] = nil
            tree(for: group.namespace).remove(group, at: group.path)
        }
    }

    private func close(_ subscriber: EventStream) {
        remove(subscriber)
        subscriber.stream.close()
    }

    // MARK: - fan-out

    private func committed(_ namespace: Namespace, before: Node, after: Node, changedPaths: [Path]) {
        guard let tree = trees[ObjectIdentifier(namespace)] else { return }
        var seen = Set<ObjectIdentifier>()
        var affected: [StreamGroup] = []
        for path in changedPaths {
            for group in tree.groups(overlapping: path) where seen.insert(ObjectIdentifier(group)).inserted {
                affected.append(group)
            }
        }
        for group in affected {
            guard let bytes = group.events(before: before, after: after, changedPaths: changedPaths) else { continue }
            for subscriber in group.streams { subscriber.stream.send(bytes) }
        }
    }

    func rulesChanged(in namespace: Namespace) {
        guard let tree = trees[ObjectIdentifier(namespace)] else { return }
        let now = context.configuration.clock.nowMilliseconds()
        for group in tree.allGroups() {
            for subscriber in group.streams {
                let decision = namespace.policy.decide(
                    AccessRequest(
                        identity: subscriber.identity, namespace: namespace.name, path: group.path,
                        operation: .read(query: group.query), oldRoot: namespace.root, newRoot: nil, now: now))
                if !decision.allowed {
                    subscriber.stream.send(EventStream.format("cancel", "Permission denied"))
                    close(subscriber)
                }
            }
        }
    }
}

extension QuerySpec {
    /// Parses REST query parameters, mapping errors to 400.
    static func fromRESTChecked(_ params: [String: String]) throws -> QuerySpec? {
        do {
            return try QuerySpec.fromREST(params)
        } catch {
            throw RESTError(400, error.userMessage)
        }
    }
}
