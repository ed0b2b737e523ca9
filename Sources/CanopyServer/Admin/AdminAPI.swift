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
// from the namespace's own tree inside the loop (so publishes of one event are serialized) and committed as one
// batch: one SQLite transaction, one consistent change per location for listeners.

import CanopyCore
import CanopyNet
import CanopyPublish

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
        let writes: [(path: Path, node: Node)]
        do {
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
                if pending { try PublishEngine.validate(root: root) }
                let feed = PublishEngine.feed(root: root, attendee: attendee, pending: pending)
                let items = JSONValue.array(feed.map { ["key": .string($0.key), "item": $0.item.json()] })
                namespace.whenDurable { _ in responder.respond(.json(200, ["attendee": .string(attendeeID), "feed": items])) }
                return
            case ("POST", "publish"):
                if let expected = request.header("if-match") {
                    let pending = root.node(at: PublishLayout.pendingContent)
                    guard expected == pending.etag else {
                        responder.respond(.json(412, pending.json(), extraHeaders: [("ETag", pending.etag)]))
                        return
                    }
                }
                if let key = params["item"] {
                    writes = try PublishEngine.publishItemWrites(root: root, key: key, now: now, publisher: identity.uid)
                } else {
                    writes = try PublishEngine.publishWrites(root: root, now: now, publisher: identity.uid)
                }
            case ("POST", "unpublish"):
                guard let key = params["item"] else { throw RESTError(400, "unpublish needs ?item=KEY") }
                writes = try PublishEngine.unpublishItemWrites(root: root, key: key, now: now, publisher: identity.uid)
            case ("POST", "revert"):
                writes = PublishEngine.revertWrites(root: root)
            case ("POST", "rollback"):
                guard let id = params["to"] else { throw RESTError(400, "rollback needs ?to=HISTORY_ID") }
                writes = try PublishEngine.rollbackWrites(root: root, historyID: id, now: now, publisher: identity.uid)
            default:
                throw RESTError(404, "Unknown admin endpoint \(method) \(request.path).")
            }
        } catch let error as PublishError {
            let status: Int
            switch error.kind {
            case .unknownItem, .notPublished, .unknownHistoryEntry: status = 404
            default: status = 400
            }
            throw RESTError(status, error.userMessage)
        }
        let newRoot = Namespace.applying(writes, to: root)
        if !writes.isEmpty { namespace.commit(writes, newRoot: newRoot) }
        let changed = JSONValue.array(writes.map { .string($0.path.description) })
        let pendingETag = newRoot.node(at: PublishLayout.pendingContent).etag
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
