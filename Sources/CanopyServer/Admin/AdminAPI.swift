// AdminAPI -- the publish engine's admin-only HTTP endpoints under `/.canopy/`.
//
//   POST /.canopy/publish?ns=E[&item=KEY]      publish pendingContent (or one item) in one atomic commit;
//                                               `if-match: <etag of pendingContent>` → 412 when it changed
//   POST /.canopy/unpublish?ns=E&item=KEY      remove one published item everywhere
//   POST /.canopy/revert?ns=E                  pendingContent := content
//   POST /.canopy/rollback?ns=E&to=ID          republish history entry ID
//   GET  /.canopy/status?ns=E                  pending vs published, item by item
//   POST /.canopy/dry-run?ns=E                 what a publish would change; body: optional attendee directory
//   POST /.canopy/preview?ns=E&attendee=ID[&pending=true]   the attendee's merged feed; body: the directory
//
// Admin means the admin credential or a token whose `admin` claim is true. Writes are computed by CanopyPublish
// from the namespace's tree on the compute thread (a large publish takes long enough to stall every namespace if
// it ran on the loop), then committed on the loop as one batch — one SQLite transaction, one consistent change per
// location for listeners — but only if the tree is still the one they were computed from; otherwise they are
// computed again (so publishes of one event never commit stale results).

import CanopyCore
import CanopyNet
import CanopyPublish
import CanopyStore

extension RESTHandler {
    func handleAdmin(_ request: HTTPRequest, method: String, _ responder: HTTPResponder) throws {
        var params: [String: String] = [:]
        for item in request.query { params[item.name] = item.value }
        let name = try namespaceName(request, params: params)
        let identity = try identify(request, params: params, namespace: name)
        guard identity.isEventAdmin else { throw RESTError.permissionDenied }
        let action = String(request.path.dropFirst("/.canopy/".count))
        guard let namespace = try context.namespace(name, create: false) else {
            throw RESTError(404, "Unknown event '\(name)': the namespace has no data.")
        }
        let root = namespace.root
        let now = context.configuration.clock.nowMilliseconds()
        let uid = identity.uid
        let compute: @Sendable (Node) throws -> [(path: Path, node: Node)]
        switch (method, action) {
        case ("GET", "status"):
            let etag = root.node(at: PublishLayout.pendingContent).etag
            namespace.whenDurable { _ in
                responder.respond(.json(200, PublishEngine.status(root: root), extraHeaders: [("ETag", etag)]))
            }
            return
        case ("POST", "dry-run"):
            let directory = try parseDirectory(request.body, required: false)
            namespace.whenDurable { _ in
                responder.respond(.json(200, PublishEngine.dryRun(root: root, directory: directory)))
            }
            return
        case ("POST", "preview"):
            guard let attendeeID = params["attendee"] else { throw RESTError(400, "preview needs ?attendee=ID") }
            guard let directory = try parseDirectory(request.body, required: true),
                let attendee = directory.attendees.first(where: { $0.id == attendeeID })
            else { throw RESTError(404, "Attendee '\(attendeeID)' is not in the directory.") }
            let pending = params["pending"] == "true"
            do {
                if pending { try PublishEngine.validate(root: root) }
            } catch {
                throw Self.restError(error)
            }
            let feed = PublishEngine.feed(root: root, attendee: attendee, pending: pending)
            let items = JSONValue.array(feed.map { ["key": .string($0.key), "item": $0.item.json()] })
            namespace.whenDurable { _ in
                responder.respond(.json(200, ["attendee": .string(attendeeID), "feed": items]))
            }
            return
        case ("POST", "publish"):
            if let key = params["item"] {
                compute = { root in
                    try PublishEngine.publishItemWrites(root: root, key: key, now: now, publisher: uid)
                }
            } else {
                compute = { root in try PublishEngine.publishWrites(root: root, now: now, publisher: uid) }
            }
        case ("POST", "unpublish"):
            guard let key = params["item"] else { throw RESTError(400, "unpublish needs ?item=KEY") }
            compute = { root in try PublishEngine.unpublishItemWrites(root: root, key: key, now: now, publisher: uid) }
        case ("POST", "revert"):
            compute = { root in PublishEngine.revertWrites(root: root) }
        case ("POST", "rollback"):
            guard let id = params["to"] else { throw RESTError(400, "rollback needs ?to=HISTORY_ID") }
            compute = { root in try PublishEngine.rollbackWrites(root: root, historyID: id, now: now, publisher: uid) }
        default:
            throw RESTError(404, "Unknown admin endpoint \(method) \(request.path).")
        }
        let write = AdminWrite(
            action: action, ifMatch: request.header("if-match"), now: now, compute: compute, namespace: namespace,
            responder: responder)
        computeOffLoop(write, attempt: 1)
    }

    /// How many times a publish is computed again when its namespace changed while it was being computed.
    static let adminWriteAttempts = 3

    /// Computes an admin write on the compute thread from the tree as it is now, then commits it on the loop if
    /// the tree is still that one (`Namespace.version`); when another write changed it meanwhile, computes
    /// again, up to `adminWriteAttempts` times, then answers 409: a publish is never committed stale.
    private func computeOffLoop(_ write: AdminWrite, attempt: Int) {
        let namespace = write.namespace
        let root = namespace.root
        let version = namespace.version
        let compute = write.compute
        let loop = context.registry.loop
        let held = LoopHeld((self, write), loop: loop)
        context.registry.computePool.run {
            let result = Result { () throws -> ComputedAdminWrite in
                let writes = try compute(root)
                let newRoot = Namespace.applying(writes, to: root)
                let mutations = writes.flatMap { Namespace.mutations(for: $0.path, before: root, after: newRoot) }
                // The ETags of pendingContent (hashes, cached per node) are computed here, not on the loop.
                _ = root.node(at: PublishLayout.pendingContent).etag
                _ = newRoot.node(at: PublishLayout.pendingContent).etag
                let changed = JSONValue.array(writes.map { .string($0.path.description) })
                return ComputedAdminWrite(writes: writes, root: newRoot, mutations: mutations, changed: changed)
            }
            let computed = LoopHeld(result, loop: loop)  // Node and Path are Sendable; the tuple array is not
            loop.execute {
                let (handler, write) = held.value
                handler.finish(write, computed.value, root: root, version: version, attempt: attempt)
            }
        }
    }

    private func finish(
        _ write: AdminWrite, _ result: Result<ComputedAdminWrite, any Error>,
        root: Node, version: UInt64, attempt: Int
    ) {
        let namespace = write.namespace
        let responder = write.responder
        guard namespace.version == version else {
            guard attempt < Self.adminWriteAttempts else {
                let message = "The event kept changing during the \(write.action); try again."
                responder.respond(.error(RESTError(409, message)))
                return
            }
            computeOffLoop(write, attempt: attempt + 1)
            return
        }
        if let expected = write.ifMatch {
            let pending = root.node(at: PublishLayout.pendingContent)
            guard expected == pending.etag else {
                responder.respond(.json(412, pending.json(), extraHeaders: [("ETag", pending.etag)]))
                return
            }
        }
        let computed: ComputedAdminWrite
        switch result {
        case .success(let value): computed = value
        case .failure(let error as PublishError):
            responder.respond(.error(Self.restError(error)))
            return
        case .failure(let error):
            responder.respond(.error(RESTError(400, (error as? any CanopyError)?.userMessage ?? "\(error)")))
            return
        }
        let writes = computed.writes
        let newRoot = computed.root
        if !writes.isEmpty { namespace.commit(writes, newRoot: newRoot, mutations: computed.mutations) }
        let changed = computed.changed
        let pendingETag = newRoot.node(at: PublishLayout.pendingContent).etag
        let action = write.action
        let now = write.now
        namespace.whenDurable { ok in
            guard ok else {
                responder.respond(.error(RESTError(500, "The \(action) could not be stored; nothing was changed.")))
                return
            }
            responder.respond(
                .json(
                    200,
                    [
                        "ok": true, "action": .string(action), "at": .int(now), "changedLocations": changed,
                        "lastPublishedAt": newRoot.node(at: PublishLayout.lastPublishedAt).value ?? .null,
                    ], extraHeaders: [("ETag", pendingETag)]))
        }
    }

    private static func restError(_ error: PublishError) -> RESTError {
        switch error.kind {
        case .unknownItem, .notPublished, .unknownHistoryEntry: RESTError(404, error.userMessage)
        default: RESTError(400, error.userMessage)
        }
    }

    private func parseDirectory(_ body: [UInt8], required: Bool) throws -> AttendeeDirectory? {
        if body.isEmpty || body.allSatisfy({ $0 == 32 || $0 == 10 || $0 == 13 || $0 == 9 }) {
            if required { throw RESTError(400, "This endpoint needs the attendee directory as the request body.") }
            return nil
        }
        do {
            return try AttendeeDirectory.parse(try JSONValue.parse(body))
        } catch {
            let message = (error as? any CanopyError)?.userMessage ?? "\(error)"
            throw RESTError(400, "Invalid attendee directory: \(message)")
        }
    }
}

/// An admin write as computed off the loop: the writes, the tree after them and their store mutations.
struct ComputedAdminWrite {
    var writes: [(path: Path, node: Node)]
    var root: Node
    var mutations: [StoreMutation]
    /// The reply's `changedLocations`.
    var changed: JSONValue
}

/// An admin write waiting for its computation: what the commit and the reply need.
struct AdminWrite {
    let action: String
    let ifMatch: String?
    let now: Int64
    let compute: @Sendable (Node) throws -> [(path: Path, node: Node)]
    let namespace: Namespace
    let responder: HTTPResponder
}

extension Identity {
    /// The admin credential, or a token carrying `admin: true` (an event organiser).
    public var isEventAdmin: Bool {
        switch self {
        case .admin: return true
        case .user(let auth, _): return auth["token"]?["admin"]?.boolValue == true
        case .anonymous: return false
        }
    }
}
