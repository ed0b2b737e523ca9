// ConsoleAPI -- the admin endpoints the organiser's console needs beyond publishing (issue 16), each scriptable:
//
//   GET    /.canopy/whoami?ns=E         {"ns", "admin": true, "operator", "uid", "rules"}: checks a credential
//   GET    /.canopy/namespaces          the events this credential administers (BackupAPI's listing, filtered)
//   GET    /.canopy/directory?ns=E      the stored attendee directory with tier and group counts
//   PUT    /.canopy/directory?ns=E      store an attendees.json or CSV directory at private/admin/directory
//   DELETE /.canopy/directory?ns=E      remove it
//   GET    /.canopy/history?ns=E        the publish history, newest first (at most PublishHistory.limit)
//   GET    /.canopy/history?ns=E&id=ID  {"id", "content"}: the snapshot entry ID names (what a rollback publishes), as a
//                                       REST GET of `content` shows it
//   POST   /.canopy/import-csv?ns=E&type=text|web|video&title=T[&order=N][&key=K][&check=true]
//                                       one `<type>CSV` pendingContent item from a CSV of email/id + description/url
//
// The policy decides them as every admin endpoint (`AccessOperation.admin`): the admin credential or an `admin: true`
// token. Their writes are ordinary sets through `Namespace.perform` as the caller, so the rules judge them as they
// judge a REST PUT of the same location.

import CanopyCore
import CanopyNet
import CanopyPublish
import CanopyStore

extension RESTHandler {
    /// `GET /.canopy/namespaces`: every namespace with a store file for which the request's credential identifies an
    /// event administrator (each namespace is tried: a token's `ns` claim decides which ones it is valid for).
    func listNamespaces(_ request: HTTPRequest, params: [String: String], _ responder: HTTPResponder) throws {
        let names = try DataDirectory(path: context.configuration.dataDirectory).namespaces()
        var allowed: [String] = []
        var identified = false
        var credentialError: (any Error)?
        for name in names {
            do {
                let identity = try identify(request, params: params, namespace: name)
                if case .anonymous = identity { continue }
                identified = true
                if identity.isEventAdmin { allowed.append(name) }
            } catch {
                credentialError = credentialError ?? error
            }
        }
        if allowed.isEmpty && !identified {
            // Nothing administered and no namespace took the credential: say why (none → 401, a bad one → 401).
            let name = try namespaceName(request, params: params)
            let identity = try identify(request, params: params, namespace: name)
            if case .anonymous = identity {
                if let credentialError { throw credentialError }
                throw RESTError(401, "Listing the events needs the admin credential or an admin token.")
            }
            identified = true
            if identity.isEventAdmin { return responder.respond(.json(200, ["namespaces": []])) }
        }
        if allowed.isEmpty && identified {
            throw RESTError(403, "This credential is not an event administrator.")
        }
        guard request.method == "GET" else { throw RESTError(405, "Use GET /.canopy/namespaces.") }
        responder.respond(.json(200, ["namespaces": .array(allowed.map { .string($0) })]))
    }

    /// `GET /.canopy/whoami`: what the (already authorized) identity may do.
    func whoami(_ name: String, identity: Identity, exists: Bool, _ responder: HTTPResponder) {
        var members = [
            JSONMember("ns", .string(name)), JSONMember("exists", .bool(exists)),
            JSONMember("admin", .bool(identity.isEventAdmin)), JSONMember("operator", .bool(identity.isAdmin)),
        ]
        if let uid = identity.uid { members.append(JSONMember("uid", .string(uid))) }
        members.append(JSONMember("rules", .bool(identity.isAdmin)))
        responder.respond(.json(200, .object(members)))
    }

    /// The directory endpoints and the history and import ones; false for any other action.
    func handleConsole(
        _ request: HTTPRequest, method: String, action: String, params: [String: String], namespace: Namespace,
        identity: Identity, now: Int64, _ responder: HTTPResponder
    ) throws -> Bool {
        let root = namespace.root
        switch (method, action) {
        case ("GET", "directory"):
            guard let stored = try storedDirectory(root) else {
                throw RESTError(
                    404, "No attendee directory is stored for '\(namespace.name)'; upload one with PUT /.canopy/directory.")
            }
            let counts = stored.counts()
            var members: [JSONMember] = []
            if case .object(let stored) = stored.json {
                for member in stored {
                    switch member.key {
                    case "tiers": members.append(JSONMember("tiers", counts.tiers))
                    case "groups": members.append(JSONMember("groups", counts.groups))
                    default: members.append(member)
                    }
                }
            }
            members.append(JSONMember("total", .int(Int64(stored.directory.attendees.count))))
            let answer = JSONValue.object(members)
            namespace.whenDurable { _ in responder.respond(.json(200, answer)) }
        case ("PUT", "directory"):
            let document = try uploadedDirectory(request)
            let counts = document.counts()
            let summary: JSONValue = [
                "ok": true, "attendees": .int(Int64(document.directory.attendees.count)), "tiers": counts.tiers,
                "groups": counts.groups,
            ]
            write(.set(path: DirectoryDocument.path, data: document.json), namespace, identity, now, responder) {
                summary
            }
        case ("DELETE", "directory"):
            write(.set(path: DirectoryDocument.path, data: .null), namespace, identity, now, responder) { ["ok": true] }
        case ("GET", "history"):
            let answer: JSONValue
            if let id = params["id"] {
                guard let snapshot = PublishHistory.snapshot(id: id, root: root) else {
                    throw RESTError(
                        404, "No usable publish history entry '\(id)' in '\(namespace.name)' (the last \(PublishHistory.limit) are kept).")
                }
                answer = .object([JSONMember("id", .string(id)), JSONMember("content", snapshot.json())])
            } else {
                answer = PublishEngine.historyJSON(root: root)
            }
            namespace.whenDurable { _ in responder.respond(.json(200, answer)) }
        case ("POST", "import-csv"):
            try importCSV(request, params: params, namespace: namespace, identity: identity, now: now, responder)
        default:
            return false
        }
        return true
    }

    /// The stored directory of `root`, or nil; a stored value that is not a directory is a clear 500-free 400.
    func storedDirectory(_ root: Node) throws -> DirectoryDocument? {
        do {
            return try DirectoryDocument(root: root)
        } catch {
            throw RESTError(
                400, "The directory stored at private/admin/directory is not usable (\(error.userMessage)); upload it again.")
        }
    }

    /// The directory in a request body: JSON (`attendees.json`), or CSV (`text/csv`, or a body not starting with
    /// `{` or `[`).
    private func uploadedDirectory(_ request: HTTPRequest) throws -> DirectoryDocument {
        let body = request.body
        guard let first = body.first(where: { $0 != 32 && $0 != 10 && $0 != 13 && $0 != 9 }) else {
            throw RESTError(400, "Send the attendee directory (attendees.json or a CSV) as the request body.")
        }
        let isCSV = (request.header("content-type") ?? "").lowercased().contains("csv") || (first != 123 && first != 91)
        if isCSV {
            do {
                return try DirectoryDocument.csv(String(decoding: body, as: UTF8.self))
            } catch {
                throw RESTError(400, "Invalid attendee directory CSV: \(error.message).")
            }
        }
        let json: JSONValue
        do {
            json = try JSONValue.parse(body)
        } catch {
            throw RESTError(400, "Invalid attendee directory: \(error.userMessage)")
        }
        do {
            return try DirectoryDocument(document: json)
        } catch {
            throw RESTError(400, error.userMessage)
        }
    }

    private func importCSV(
        _ request: HTTPRequest, params: [String: String], namespace: Namespace, identity: Identity, now: Int64,
        _ responder: HTTPResponder
    ) throws {
        let root = namespace.root
        guard let type = params["type"], CSVImport.types.contains(type) else {
            throw RESTError(400, "import-csv needs ?type=text, web or video.")
        }
        guard let title = params["title"]?.trimmingCharacters(in: " "), !title.isEmpty else {
            throw RESTError(400, "import-csv needs ?title=… (the item's title).")
        }
        guard let directory = try storedDirectory(root) else {
            throw RESTError(
                400, "Upload the attendee directory first (PUT /.canopy/directory): import rows are checked against it.")
        }
        let pending = root.node(at: PublishLayout.pendingContent)
        let order: Double
        if let text = params["order"] {
            guard let value = Double(text), value.isFinite else { throw RESTError(400, "order must be a number.") }
            order = value
        } else {
            let orders = pending.children.compactMap { $0.node.child("order").value?.doubleValue }
            order = (orders.max() ?? 0).rounded(.down) + 1
        }
        let key = params["key"] ?? context.pushIDs.next(nowMilliseconds: now)
        guard Key.isValid(key) else { throw RESTError(400, "Invalid item key '\(RESTParameters.printable(key))'.") }
        let result: CSVImport
        do {
            result = try CSVImport(
                csv: String(decoding: request.body, as: UTF8.self), type: type, title: title, order: order,
                directory: directory)
        } catch {
            throw RESTError(400, "Invalid import CSV: \(error.message).")
        }
        var members: [JSONMember] = [
            JSONMember("imported", .int(Int64(result.imported))), JSONMember("total", .int(Int64(result.total))),
            JSONMember("rejected", .array(result.rejected.map(\.json))),
        ]
        guard let item = result.item else {
            let message = "No row was imported (\(result.rejected.count) of \(result.total) rejected); nothing was written."
            responder.respond(.json(400, .object([JSONMember("error", .string(message))] + members)))
            return
        }
        if params["check"] == "true" {
            responder.respond(.json(200, .object([JSONMember("ok", true), JSONMember("check", true)] + members)))
            return
        }
        members.insert(contentsOf: [JSONMember("ok", true), JSONMember("key", .string(key))], at: 0)
        let answer = JSONValue.object(members)
        write(.set(path: PublishLayout.pendingContent.child(key), data: item), namespace, identity, now, responder) {
            answer
        }
    }

    /// Performs `operation` as `identity` and answers `answer()` once durable, or the write's error.
    private func write(
        _ operation: WriteOperation, _ namespace: Namespace, _ identity: Identity, _ now: Int64,
        _ responder: HTTPResponder, answer: @escaping () -> JSONValue
    ) {
        namespace.perform(operation, as: identity, now: now) { result in
            switch result {
            case .success: responder.respond(.json(200, answer()))
            case .failure(let error): responder.respond(error.httpResponse)
            }
        }
    }
}

extension PublishEngine {
    /// `{"limit", "entries": [{"id", "publishedAt", "itemCount", "publisher"?, "rollbackOf"?, "contentHash",
    /// "current"}]}`, newest first; `current` marks the newest entry when its snapshot is the published content.
    static func historyJSON(root: Node) -> JSONValue {
        let history = root.node(at: PublishLayout.history)
        let published = root.node(at: PublishLayout.content).hash
        var entries: [JSONValue] = []
        for (index, key) in history.childKeys.reversed().enumerated() {
            let entry = history.child(key)
            var members = [JSONMember("id", .string(key))]
            for field in ["publishedAt", "itemCount", "publisher", "rollbackOf", "contentHash"] {
                if let value = entry.child(field).value { members.append(JSONMember(field, value)) }
            }
            let hash = entry.child("contentHash").value?.stringValue
            members.append(JSONMember("current", .bool(index == 0 && hash == published)))
            entries.append(.object(members))
        }
        return .object([
            JSONMember("limit", .int(Int64(PublishHistory.limit))), JSONMember("entries", .array(entries)),
        ])
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var text = Substring(self)
        while text.first == set { text.removeFirst() }
        while text.last == set { text.removeLast() }
        return String(text)
    }
}
