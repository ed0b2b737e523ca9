// RESTHandler -- routes HTTP requests: data (`/<path>.json`), rules (`/.settings/rules.json`), CORS preflight.

import CanopyCore
import CanopyNet
import CanopyRules

/// A parsed data request: where, who, and with which options.
struct DataRequest {
    var http: HTTPRequest
    var method: String
    var path: Path
    var namespaceName: String
    var identity: Identity
    var params: [String: String]
    /// `timeout`, `writeSizeLimit`, `download`, validated.
    var parameters: RESTParameters
    var now: Int64

    var pretty: Bool { params["print"] == "pretty" }
    var silent: Bool { params["print"] == "silent" }
}

/// The HTTP entry point of the daemon. Loop-confined.
final class RESTHandler: HTTPHandler {
    let context: ServerContext

    init(context: ServerContext) { self.context = context }

    func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        // Health, readiness and metrics name no namespace and wait for none.
        if let endpoint = OperationsEndpoint(rawValue: request.path) {
            context.handleOperations(endpoint, request, responder, open: false)
            return
        }
        // The console's static files name no namespace and need no credential (the page asks for one).
        if ConsoleEndpoint.handles(request.path) {
            responder.respond(ConsoleEndpoint.response(to: request))
            return
        }
        if answerEarly(request, responder) || context.realtime?.openEarly(request, responder) == true { return }
        context.whenNamespaceReady(for: request, responder) { [self] in handleLoadedRequest(request, responder) }
    }

    /// Handles a request whose namespace is open (or has no file).
    func handleLoadedRequest(_ request: HTTPRequest, _ responder: HTTPResponder) {
        do {
            try route(request, responder)
        } catch {
            responder.respond(.error(error))
        }
    }

    private func route(_ request: HTTPRequest, _ responder: HTTPResponder) throws {
        if request.method == "OPTIONS" {
            responder.respond(Self.preflight)
            return
        }
        if let realtime = context.realtime, realtime.handles(request) {
            realtime.handle(request, responder)
            return
        }
        let method = try effectiveMethod(request)
        if request.path.hasPrefix("/.canopy/") {
            try handleAdmin(request, method: method, responder)
            return
        }
        if request.path == "/.settings/rules.json" {
            try handleRules(request, method: method, responder)
            return
        }
        guard request.path.hasSuffix(".json") else {
            if request.path == "/" && method == "GET" {
                responder.respond(.json(200, ["name": "canopy", "status": "ok"]))
                return
            }
            throw RESTError(404, "Not found. Data paths end in .json, e.g. /users/ada.json")
        }
        if request.path.hasPrefix("/.") && !request.path.hasPrefix("/.json") {
            throw RESTError(404, "Unknown endpoint \(request.path).")
        }
        let data = try parseDataRequest(request, method: method)
        switch method {
        case "GET": try handleGet(data, responder)
        case "PUT": try handlePut(data, responder)
        case "POST": try handlePost(data, responder)
        case "PATCH": try handlePatch(data, responder)
        case "DELETE": try handleDelete(data, responder)
        default: throw RESTError(405, "Method \(method) is not allowed.")
        }
    }

    /// `POST` with `X-HTTP-Method-Override` (header or query parameter) acts as that method; an override that
    /// names anything else is refused (it must never fall back to a POST, which would push data).
    func effectiveMethod(_ request: HTTPRequest) throws(RESTError) -> String {
        guard request.method == "POST" else { return request.method }
        guard let override = request.header("x-http-method-override") ?? request.queryValue("x-http-method-override")
        else { return request.method }
        let method = override.uppercased()
        guard ["PUT", "PATCH", "DELETE", "GET", "POST"].contains(method) else {
            throw RESTError(
                400,
                "Invalid X-HTTP-Method-Override '\(RESTParameters.printable(override))': use PUT, PATCH, DELETE or GET.")
        }
        return method
    }

    func parseDataRequest(_ request: HTTPRequest, method: String) throws -> DataRequest {
        var params: [String: String] = [:]
        for item in request.query { params[item.name] = item.value }
        let rawPath = String(request.path.dropLast(".json".count))
        let path = try Path(parsing: rawPath, allowPriorityLeaf: true)
        let namespace = try namespaceName(request, params: params)
        let identity = try identify(request, params: params, namespace: namespace)
        return DataRequest(
            http: request, method: method, path: path, namespaceName: namespace, identity: identity,
            params: params, parameters: try RESTParameters(params), now: context.configuration.clock.nowMilliseconds())
    }

    func namespaceName(_ request: HTTPRequest, params: [String: String]) throws -> String {
        try context.namespaceName(request, params: params)
    }

    func identify(_ request: HTTPRequest, params: [String: String], namespace: String) throws -> Identity {
        try context.identify(request, params: params, namespace: namespace)
    }

    static let preflight = HTTPResponse(
        status: 200,
        headers: commonHeaders + [
            ("Access-Control-Allow-Methods", "GET, PUT, POST, PATCH, DELETE, OPTIONS"),
            (
                "Access-Control-Allow-Headers",
                "Content-Type, Authorization, X-Firebase-ETag, If-Match, If-None-Match, X-HTTP-Method-Override"
            ),
            ("Access-Control-Expose-Headers", "ETag"),
            ("Access-Control-Max-Age", "3600"),
            ("Content-Length", "0"),
        ],
        body: [])

    // MARK: - Rules endpoint

    private func handleRules(_ request: HTTPRequest, method: String, _ responder: HTTPResponder) throws {
        var params: [String: String] = [:]
        for item in request.query { params[item.name] = item.value }
        let name = try namespaceName(request, params: params)
        let identity = try identify(request, params: params, namespace: name)
        guard identity.isAdmin else { throw RESTError.permissionDenied }
        switch method {
        case "GET":
            // A namespace whose saved rules failed shows why (503), as its data requests do.
            let namespace = try context.namespace(name, create: false)
            // The text exactly as it was stored, comments and line breaks included, as Firebase answers it.
            let source = namespace?.rulesSource ?? context.defaultRulesSource
            responder.respond(
                HTTPResponse(
                    status: 200, headers: [("Content-Type", "application/json; charset=utf-8")] + commonHeaders,
                    body: Array(source.utf8)))
        case "PUT":
            let source = String(decoding: request.body, as: UTF8.self)
            let compiled = try CompiledRules.compile(source: source)
            // Allowed while the saved rules fail: this is how an admin repairs the namespace without editing files.
            let namespace = try context.namespace(name, whileRulesFail: true)
            if let log = namespace.log {
                // Cluster mode: acknowledged once in the log (after the writes before it), like a write; only then
                // saved and put in force here. A failed append changes nothing.
                let held = LoopHeld((responder, context), loop: context.loop)
                context.registry.setRulesThroughLog(source, compiled: compiled, for: namespace, log: log) { result in
                    let (responder, context) = held.value
                    guard case .success = result else {
                        return responder.respond(
                            HTTPResponse.error(
                                status: 503, message: "The rules could not be stored in the cluster's log; the rules in force are unchanged."))
                    }
                    context.realtime?.rulesChanged(in: namespace)
                    responder.respond(.json(200, ["status": "ok"]))
                }
                return
            }
            do {
                try context.registry.setRules(source, compiled: compiled, for: namespace)
            } catch {
                throw RESTError(
                    500, "The rules could not be saved (\(error.reason)); the rules in force are unchanged.")
            }
            Logger(label: "canopy.rules").info("rules.replaced", ["ns": name])
            context.realtime?.rulesChanged(in: namespace)
            responder.respond(.json(200, ["status": "ok"]))
        default:
            throw RESTError(405, "Method \(method) is not allowed on rules.")
        }
    }
}
