// RESTData -- the data methods of the REST API: GET, PUT, POST, PATCH, DELETE with Firebase's semantics.

import CanopyCore
import CanopyNet

extension RESTHandler {
    // MARK: GET

    /// - Parameter early: what an early read found while the namespace loads (RESTEarlyRead); throws
    ///   `EarlyReadNeedsTree` when that is not enough to answer exactly.
    func handleGet(_ request: DataRequest, _ responder: HTTPResponder, early: EarlyTree? = nil) throws {
        // `GET /p/.priority.json` reads the priority of `/p` (null when it has none), under `/p`'s read rules.
        let priorityOf = request.path.lastKey.flatMap { sameKey($0, Key.priority) ? request.path.parent : nil }
        let stream = request.http.header("accept")?.contains("text/event-stream") == true
        if priorityOf != nil {
            let shaped = try QuerySpec.fromREST(request.params) != nil || request.params["shallow"] != nil
                || request.params["format"] != nil
            guard !stream && !shaped else {
                throw RESTError(400, "A .priority can only be read as a value: stream or query its parent instead.")
            }
        }
        if stream, let realtime = context.realtime {
            try realtime.startEventStream(request, responder, early: early)
            return
        }
        let query = try QuerySpec.fromREST(request.params)
        let shallow = request.params["shallow"] == "true"
        if shallow && query != nil {
            throw RESTError(400, "Mixing 'shallow' and querying parameters is not supported")
        }
        let wantsETag = request.http.header("x-firebase-etag") == "true"
        let ifNoneMatch = request.http.header("if-none-match")
        if (wantsETag || ifNoneMatch != nil) && (query != nil || shallow) {
            throw RESTError(400, "ETags are not supported together with queries or shallow reads.")
        }
        let namespace = early == nil ? try context.namespace(request.namespaceName, create: false) : nil
        let root = early?.root ?? namespace?.root ?? .empty
        try authorizeRead(request, at: priorityOf ?? request.path, query: query, namespace: namespace, early: early)
        if (early?.policy ?? namespace?.policy ?? context.defaultPolicy).isUnindexed(query, at: request.path) {
            Logger(label: "canopy.rules").warning(
                "query.unindexed", ["ns": request.namespaceName, "path": request.path.description,
                "hint": "add .indexOn for this key to the rules"])
        }
        let node = root.node(at: request.path)
        let respond = { [request] in
            var headers: [(String, String)] = []
            if let name = request.parameters.download {
                headers.append(("Content-Disposition", "attachment; filename=\"\(name)\""))
            }
            if wantsETag || ifNoneMatch != nil {
                let etag = node.etag
                headers.append(("ETag", etag))
                if let ifNoneMatch, ifNoneMatch == etag {
                    responder.respond(.empty(304, extraHeaders: headers))
                    return
                }
            }
            let export = request.params["format"] == "export"
            let answered = query.map { $0.window(of: node) } ?? node
            if !shallow, !request.pretty, request.params["callback"] == nil {
                // Written straight from the tree (`Node.writeJSON`), without a `JSONValue` copy of it.
                var body: [UInt8] = []
                answered.writeJSON(export: export, into: &body)
                responder.respond(.json(200, body: body, extraHeaders: headers))
                return
            }
            let value = shallow ? node.shallowJSON() : answered.json(export: export)
            if let callback = request.params["callback"] {
                guard callback.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "$" || $0 == "." })
                else {
                    responder.respond(RESTError(400, "Invalid callback name.").httpResponse)
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
        guard let namespace else {
            respond()
            return
        }
        // The answer waits for the writes before it to be durable; `timeout` bounds that wait.
        guard let timeout = request.parameters.timeoutMilliseconds else {
            namespace.whenDurable { _ in respond() }
            return
        }
        var answered = false
        let timer = context.loop.schedule(afterMilliseconds: timeout) {
            guard !answered else { return }
            answered = true
            responder.respond(RESTError(400, "The read did not finish within timeout=\(timeout)ms.").httpResponse)
        }
        namespace.whenDurable { _ in
            guard !answered else { return }
            answered = true
            timer.cancel()
            respond()
        }
    }

    // MARK: PUT / DELETE

    func handlePut(_ request: DataRequest, _ responder: HTTPResponder) throws {
        try withBody(request, responder) { [self] request, body in
            // A transaction a cluster replica forwards carries the wire hash it was conditioned on instead.
            let hash = request.http.header(ClusterProxy.hashConditionHeader).map { WriteCondition.hash($0, at: request.path) }
            let condition = request.http.header("if-match").map { WriteCondition.etag($0, at: request.path) } ?? hash
            try write(request, .set(path: request.path, data: body), condition: condition, responder) { $0.resolved }
        }
    }

    func handleDelete(_ request: DataRequest, _ responder: HTTPResponder) throws {
        let condition = request.http.header("if-match").map { WriteCondition.etag($0, at: request.path) }
        try write(request, .set(path: request.path, data: .null), condition: condition, responder) { _ in .null }
    }

    // MARK: POST

    func handlePost(_ request: DataRequest, _ responder: HTTPResponder) throws {
        if request.http.header("if-match") != nil {
            throw RESTError(400, "Conditional requests are not supported for POST.")
        }
        try withBody(request, responder) { [self] request, body in
            let name = context.pushIDs.next(nowMilliseconds: request.now)
            try write(request, .set(path: request.path.child(name), data: body), condition: nil, responder) { _ in
                ["name": .string(name)]
            }
        }
    }

    // MARK: PATCH

    func handlePatch(_ request: DataRequest, _ responder: HTTPResponder) throws {
        if request.http.header("if-match") != nil {
            throw RESTError(400, "Conditional requests are not supported for PATCH.")
        }
        try withBody(request, responder) { [self] request, body in
            guard case .object = body else {  // refused before the namespace (and its file) is created
                throw RESTError(400, "Invalid data; couldn't parse JSON object. PATCH needs an object.")
            }
            try write(request, .update(path: request.path, data: body), condition: nil, responder) { $0.resolved }
        }
    }

    /// Performs `operation` through the namespace's write pipeline and answers once it is durable: `answer`'s
    /// JSON (204 for `print=silent`), with the new ETag when the request was conditional.
    private func write(
        _ request: DataRequest, _ operation: WriteOperation, condition: WriteCondition?, _ responder: HTTPResponder,
        answer: @escaping (WriteReceipt) -> JSONValue
    ) throws {
        let namespace = try context.namespace(request.namespaceName)
        try request.parameters.writeSizeLimit.check(operation, in: namespace.root)
        namespace.perform(operation, as: request.identity, now: request.now, condition: condition) { result in
            switch result {
            case .success(let receipt):
                let headers = condition == nil ? [] : [("ETag", receipt.after.node(at: operation.path).etag)]
                if request.silent {
                    responder.respond(.empty(204, extraHeaders: headers))
                } else {
                    responder.respond(.json(200, answer(receipt), pretty: request.pretty, extraHeaders: headers))
                }
            case .failure(let error):
                responder.respond(error.httpResponse)
            }
        }
    }

    // MARK: helpers

    /// A body at least this large is parsed on the compute thread, so the loop keeps serving meanwhile.
    static let offLoopParseBytes = 256 * 1024

    /// Parses the request's JSON body and continues with the request (without its body bytes) and the value:
    /// at once for a small body; for a large one on the compute thread (a 200 MB document takes seconds to
    /// parse), then back on the loop. The body's share of the body budget is held until `next` returns, so the
    /// parsed value counts as in flight too. An error, thrown or from parsing, is the answer.
    func withBody(
        _ request: DataRequest, _ responder: HTTPResponder,
        _ next: @escaping (DataRequest, JSONValue) throws -> Void
    ) throws {
        var stripped = request
        let bytes = stripped.http.body
        let charge = stripped.http.bodyCharge
        stripped.http.body = []
        stripped.http.bodyCharge = nil
        guard bytes.count >= Self.offLoopParseBytes, let compute = context.compute else {
            try next(stripped, try JSONValue.parse(bytes))
            withExtendedLifetime(charge) {}
            return
        }
        let loop = context.loop
        let held = LoopHeld((stripped, next, responder), loop: loop)
        let hook = context.configuration.beforeLargeBodyParse
        compute {
            hook?()
            let parsed = Result { () throws(JSONParseError) in try JSONValue.parse(bytes) }
            loop.execute {
                let (request, next, responder) = held.value
                do {
                    try next(request, try parsed.get())
                } catch {
                    responder.respond(.error(error))
                }
                withExtendedLifetime(charge) {}
            }
        }
    }

    /// Refuses a read that the policy does not allow (of a namespace that may not be open: its default rules).
    func authorizeRead(
        _ request: DataRequest, at path: Path, query: QuerySpec?, namespace: Namespace?, early: EarlyTree? = nil
    ) throws {
        let decision = context.authorize(
            .read(query: query), at: path, as: request.identity, in: request.namespaceName, namespace: namespace,
            now: request.now, early: early)
        if early?.coverage.missed == true { throw EarlyReadNeedsTree() }
        guard decision.allowed else { throw WriteError.permissionDenied(reason: decision.reason) }
    }
}
