// AdminAPI -- the publish engine's admin-only HTTP endpoints under `/.canopy/`.
//
//   POST /.canopy/publish?ns=E[&item=KEY][&complete=required]   publish pendingContent (or one item) in one
//                                               atomic commit (refused when an item is incomplete, if required);
//                                               `if-match: <etag of pendingContent>` → 412 when it changed
//   POST /.canopy/unpublish?ns=E&item=KEY      remove one published item everywhere
//   POST /.canopy/revert?ns=E                  pendingContent := content
//   POST /.canopy/rollback?ns=E&to=ID          republish history entry ID
//   GET  /.canopy/status?ns=E                  pending vs published, item by item
//   POST /.canopy/dry-run?ns=E                 what a publish would change; body: optional attendee directory
//                                               (default: the one stored with the event), plus incomplete items
//   POST /.canopy/preview?ns=E&attendee=ID[&pending=true]   the attendee's merged feed; body: the directory
//                                               (default: the stored one; GET too)
//   whoami, directory, history, import-csv: see ConsoleAPI
//   GET  /.canopy/backup?ns=E, POST /.canopy/restore?ns=E, GET /.canopy/namespaces   see BackupAPI
//
// Admin means the admin credential or a token whose `admin` claim is true; the namespace's policy decides it
// (`AccessOperation.admin`). Writes go through `Namespace.perform`: computed by CanopyPublish from the namespace's
// tree on the compute thread (a large publish would otherwise stall every namespace), then committed on the loop
// as one batch — one SQLite transaction, one consistent change per location for listeners — only if the tree is
// still the one they were computed from; otherwise computed again (a publish is never committed stale).

import CanopyCore
import CanopyNet
import CanopyPublish

extension RESTHandler {
    func handleAdmin(_ request: HTTPRequest, method: String, _ responder: HTTPResponder) throws {
        var params: [String: String] = [:]
        for item in request.query { params[item.name] = item.value }
        let action = String(request.path.dropFirst("/.canopy/".count))
        if action == "namespaces" {
            let asked = try? identify(request, params: params, namespace: namespaceName(request, params: params))
            if asked?.isAdmin != true {
                // An organiser's token: the events it administers (the admin credential gets BackupAPI's full list).
                try listNamespaces(request, params: params, responder)
                return
            }
        }
        let name = try namespaceName(request, params: params)
        let identity = try identify(request, params: params, namespace: name)
        if try handleArchive(request, method: method, action: action, name: name, identity: identity, responder) {
            return
        }
        let now = context.configuration.clock.nowMilliseconds()
        // The read endpoints and unknown ones are refused to non-administrators before anything else: the policy
        // decides, as for every other request (an unknown event must not be told apart from a forbidden one).
        let existing = try context.namespace(name, create: false)
        let decision = context.authorize(.admin(action), at: .root, as: identity, in: name, namespace: existing, now: now)
        guard decision.allowed else { throw WriteError.permissionDenied(reason: decision.reason) }
        if action == "whoami" {
            guard method == "GET" else { throw RESTError(405, "Use GET /.canopy/whoami.") }
            return whoami(name, identity: identity, exists: existing != nil, responder)
        }
        guard let namespace = existing else {
            throw RESTError(404, "Unknown event '\(name)': the namespace has no data.")
        }
        if try handleConsole(
            request, method: method, action: action, params: params, namespace: namespace, identity: identity,
            now: now, responder)
        {
            return
        }
        let root = namespace.root
        let operation: AdminAction
        switch (method, action) {
        case ("GET", "status"):
            let etag = root.node(at: PublishLayout.pendingContent).etag
            namespace.whenDurable { _ in
                responder.respond(.json(200, PublishEngine.status(root: root), extraHeaders: [("ETag", etag)]))
            }
            return
        case ("POST", "dry-run"):
            // The body's directory, else the one stored with the event (ConsoleAPI), else none.
            let directory = try parseDirectory(request.body, required: false) ?? storedDirectory(root)?.directory
            var answer = PublishEngine.dryRun(root: root, directory: directory)
            if case .object(var members) = answer {
                let incomplete = PublishEngine.incompleteItems(root: root)
                members.append(JSONMember("incomplete", .array(incomplete.map(\.json))))
                answer = .object(members)
            }
            namespace.whenDurable { [answer] _ in responder.respond(.json(200, answer)) }
            return
        case ("POST", "preview"), ("GET", "preview"):
            guard let attendeeID = params["attendee"] else { throw RESTError(400, "preview needs ?attendee=ID") }
            guard let directory = try parseDirectory(request.body, required: false) ?? storedDirectory(root)?.directory
            else {
                throw RESTError(
                    400, "preview needs the attendee directory: send it as the body or store it (PUT /.canopy/directory).")
            }
            guard let attendee = directory.attendees.first(where: { $0.id == attendeeID })
            else { throw RESTError(404, "Attendee '\(attendeeID)' is not in the directory.") }
            let pending = params["pending"] == "true"
            if pending { try PublishEngine.validate(root: root) }
            let feed = PublishEngine.feed(root: root, attendee: attendee, pending: pending)
            let items = JSONValue.array(feed.map { ["key": .string($0.key), "item": $0.item.json()] })
            namespace.whenDurable { _ in
                responder.respond(.json(200, ["attendee": .string(attendeeID), "feed": items]))
            }
            return
        case ("POST", "publish"):
            let requireComplete: Bool
            switch params["complete"] {
            case nil: requireComplete = false
            case "required": requireComplete = true
            case let other?: throw RESTError(400, "complete=\(other): the only value is complete=required")
            }
            operation = .publish(item: params["item"], requireComplete: requireComplete)
        case ("POST", "unpublish"):
            guard let key = params["item"] else { throw RESTError(400, "unpublish needs ?item=KEY") }
            operation = .unpublish(item: key)
        case ("POST", "revert"):
            operation = .revert
        case ("POST", "rollback"):
            guard let id = params["to"] else { throw RESTError(400, "rollback needs ?to=HISTORY_ID") }
            operation = .rollback(historyID: id)
        default:
            throw RESTError(404, "Unknown admin endpoint \(method) \(request.path).")
        }
        // `if-match: <etag of pendingContent>`: publish only what the organiser looked at.
        let condition = request.header("if-match").map { WriteCondition.etag($0, at: PublishLayout.pendingContent) }
        namespace.perform(.admin(operation), as: identity, now: now, condition: condition) { result in
            switch result {
            case .success(let receipt):
                let pendingETag = receipt.after.node(at: PublishLayout.pendingContent).etag
                let lastPublishedAt = receipt.after.node(at: PublishLayout.lastPublishedAt).value ?? .null
                responder.respond(
                    .json(
                        200, body: Self.actionAnswer(action: action, at: now, receipt, lastPublishedAt: lastPublishedAt),
                        extraHeaders: [("ETag", pendingETag)]))
            case .failure(let error):
                responder.respond(error.httpResponse)
            }
        }
    }

    /// `{"ok":true,"action":…,"at":…,"changedLocations":[…],"lastPublishedAt":…}`, written straight to bytes: a
    /// publish changes about 5,000 locations, and a string and a `JSONValue` for each took the loop 2 ms before it
    /// could write the answer and the publish's events.
    static func actionAnswer(action: String, at now: Int64, _ receipt: WriteReceipt, lastPublishedAt: JSONValue)
        -> [UInt8]
    {
        var body: [UInt8] = []
        body.append(contentsOf: #"{"ok":true,"action":"#.utf8)
        JSONValue.writeQuoted(action, into: &body)
        body.append(contentsOf: #","at":"#.utf8)
        JSONValue.int(now).write(into: &body)
        body.append(contentsOf: #","changedLocations":["#.utf8)
        var first = true
        receipt.forEachPath { path in
            if !first { body.append(UInt8(ascii: ",")) }
            first = false
            JSONValue.writeQuoted(path, into: &body)
        }
        body.append(contentsOf: #"],"lastPublishedAt":"#.utf8)
        lastPublishedAt.write(into: &body)
        body.append(UInt8(ascii: "}"))
        return body
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
