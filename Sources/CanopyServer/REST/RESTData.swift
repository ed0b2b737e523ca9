// RESTData -- the data methods of the REST API: GET, PUT, POST, PATCH, DELETE with Firebase's semantics.

import CanopyCore
import CanopyNet

extension RESTHandler {
    // MARK: GET

    func handleGet(_ request: DataRequest, _ responder: HTTPResponder) throws {
        if request.http.header("accept")?.contains("text/event-stream") == true, let realtime = context.realtime {
            try realtime.startEventStream(request, responder)
            return
        }
        let query = try QuerySpec.fromRESTChecked(request.params)
        let shallow = request.params["shallow"] == "true"
        if shallow && query != nil {
            throw RESTError(400, "Mixing 'shallow' and querying parameters is not supported")
        }
        let wantsETag = request.http.header("x-firebase-etag") == "true"
        let ifNoneMatch = request.http.header("if-none-match")
        if (wantsETag || ifNoneMatch != nil) && (query != nil || shallow) {
            throw RESTError(400, "ETags are not supported together with queries or shallow reads.")
        }
        let namespace = try context.namespace(request.namespaceName, create: false)
        let root = namespace?.root ?? .empty
        try authorize(request, .read(query: query), namespace: namespace, oldRoot: root, newRoot: nil)
        if (namespace?.policy ?? context.defaultPolicy).isUnindexed(query, at: request.path) {
            Logger(label: "canopy.rules").warning(
                "query.unindexed", ["ns": request.namespaceName, "path": request.path.description,
                "hint": "add .indexOn for this key to the rules"])
        }
        let node = root.node(at: request.path)
        let respond = { [request] in
            var headers: [(String, String)] = []
            if wantsETag || ifNoneMatch != nil {
                let etag = node.etag
                headers.append(("ETag", etag))
                if let ifNoneMatch, ifNoneMatch == etag {
                    responder.respond(.empty(304, extraHeaders: headers))
                    return
                }
            }
            let value: JSONValue
            if shallow {
                value = node.shallowJSON()
            } else if let query {
                value = query.window(of: node).json(export: request.params["format"] == "export")
            } else {
                value = node.json(export: request.params["format"] == "export")
            }
            if let callback = request.params["callback"] {
                guard callback.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "$" || $0 == "." })
                else {
                    responder.respond(.error(RESTError(400, "Invalid callback name.")))
                    return
                }
                let body = Array("\(callback)(\(value.serialized()));".utf8)
                responder.respond(
                    HTTPResponse(
                        status: 200, headers: [("Content-Type", "application/javascript; charset=utf-8")] + commonHeaders,
                        body: body))
                return
            }
            responder.respond(.json(200, value, pretty: request.pretty, extraHeaders: headers))
        }
        if let namespace {
            namespace.whenDurable { _ in respond() }
        } else {
            respond()
        }
    }

    // MARK: PUT / DELETE

    func handlePut(_ request: DataRequest, _ responder: HTTPResponder) throws {
        let body = try parseBody(request)
        try write(request, at: request.path, json: body, responder: responder) { resolved in resolved }
    }

    func handleDelete(_ request: DataRequest, _ responder: HTTPResponder) throws {
        try write(request, at: request.path, json: .null, responder: responder) { _ in .null }
    }

    // MARK: POST

    func handlePost(_ request: DataRequest, _ responder: HTTPResponder) throws {
        if request.http.header("if-match") != nil {
            throw RESTError(400, "Conditional requests are not supported for POST.")
        }
        let body = try parseBody(request)
        let name = context.pushIDs.next(nowMilliseconds: request.now)
        try write(request, at: request.path.child(name), json: body, responder: responder) { _ in
            ["name": .string(name)]
        }
    }

    /// Replaces the node at `path` (PUT, POST, DELETE), honouring `if-match`, and answers after the commit.
    private func write(
        _ request: DataRequest, at path: Path, json: JSONValue, responder: HTTPResponder,
        answer: @escaping (JSONValue) -> JSONValue
    ) throws {
        guard let namespace = try context.namespace(request.namespaceName, create: true) else {
            throw RESTError(500, "Namespace unavailable.")
        }
        let old = namespace.root
        let resolved: JSONValue
        let node: Node
        do {
            (node, resolved) = try WriteBuilder.set(json, at: path, root: old, now: request.now)
        } catch {
            throw RESTError(400, error.userMessage)
        }
        var conditional = false
        if let ifMatch = request.http.header("if-match") {
            conditional = true
            let current = old.node(at: path)
            let etag = current.etag
            guard ifMatch == etag else {
                responder.respond(.json(412, current.json(), extraHeaders: [("ETag", etag)]))
                return
            }
        }
        let newRoot = old.setting(node, at: path)
        try authorize(request, .write, namespace: namespace, oldRoot: old, newRoot: newRoot, path: path)
        namespace.commit([(path, node)], newRoot: newRoot)
        let newETag = conditional ? newRoot.node(at: path).etag : nil
        namespace.whenDurable { ok in
            guard ok else {
                responder.respond(.error(RESTError(500, "The write could not be stored; nothing was changed.")))
                return
            }
            let headers = newETag.map { [("ETag", $0)] } ?? []
            if request.silent {
                responder.respond(.empty(204, extraHeaders: headers))
            } else {
                responder.respond(.json(200, answer(resolved), pretty: request.pretty, extraHeaders: headers))
            }
        }
    }

    // MARK: PATCH

    func handlePatch(_ request: DataRequest, _ responder: HTTPResponder) throws {
        if request.http.header("if-match") != nil {
            throw RESTError(400, "Conditional requests are not supported for PATCH.")
        }
        let body = try parseBody(request)
        guard case .object = body else {  // refused before the namespace (and its file) is created
            throw RESTError(400, "Invalid data; couldn't parse JSON object. PATCH needs an object.")
        }
        guard let namespace = try context.namespace(request.namespaceName, create: true) else {
            throw RESTError(500, "Namespace unavailable.")
        }
        let old = namespace.root
        let (writes, relativePaths, echo) = try WriteBuilder.update(body, at: request.path, root: old, now: request.now)
        let newRoot = Namespace.applying(writes, to: old)
        try authorize(
            request, .update(childPaths: relativePaths), namespace: namespace, oldRoot: old, newRoot: newRoot)
        if !writes.isEmpty { namespace.commit(writes, newRoot: newRoot, mergeAt: request.path) }
        namespace.whenDurable { ok in
            guard ok else {
                responder.respond(.error(RESTError(500, "The update could not be stored; nothing was changed.")))
                return
            }
            if request.silent {
                responder.respond(.empty(204))
            } else {
                responder.respond(.json(200, .object(echo), pretty: request.pretty))
            }
        }
    }

    // MARK: helpers

    func parseBody(_ request: DataRequest) throws -> JSONValue {
        do {
            return try JSONValue.parse(request.http.body)
        } catch {
            throw RESTError(400, error.userMessage)
        }
    }

    func authorize(
        _ request: DataRequest, _ operation: AccessOperation, namespace: Namespace?, oldRoot: Node, newRoot: Node?,
        path: Path? = nil
    ) throws {
        let policy = namespace?.policy ?? context.defaultPolicy
        let decision = policy.decide(
            AccessRequest(
                identity: request.identity, namespace: request.namespaceName, path: path ?? request.path,
                operation: operation, oldRoot: oldRoot, newRoot: newRoot, now: request.now))
        guard decision.allowed else {
            Logger(label: "canopy.rules").debug(
                "rules.denied", ["ns": request.namespaceName, "path": "\(path ?? request.path)", "why": decision.reason])
            throw RESTError.permissionDenied
        }
    }
}
