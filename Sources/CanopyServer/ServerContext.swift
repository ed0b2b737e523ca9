// ServerContext -- what the request handlers share: configuration, credentials, namespaces, push IDs.

import CanopyCore
import CanopyNet
import CanopyStore

/// The realtime layer (SSE, WebSocket, long polling), plugged into the REST handler.
protocol RealtimeService: AnyObject {
    /// Whether this request is a realtime transport (`/.ws`, `/.lp`).
    func handles(_ request: HTTPRequest) -> Bool
    func handle(_ request: HTTPRequest, _ responder: HTTPResponder)
    /// `GET` with `Accept: text/event-stream`.
    func startEventStream(_ request: DataRequest, _ responder: HTTPResponder) throws
    /// The namespace's rules were replaced: re-check every listener.
    func rulesChanged(in namespace: Namespace)
    /// The daemon is stopping: end what would otherwise hold the drain open (long polls the server is holding).
    func shuttingDown()
}

/// Shared state of the request handlers. Loop-confined.
final class ServerContext {
    let configuration: ServerConfiguration
    let credentials: Credentials
    let registry: NamespaceRegistry
    let pushIDs = PushIDSource()
    var realtime: (any RealtimeService)?
    let defaultPolicy: any AccessPolicy
    let defaultRulesSource: String

    init(configuration: ServerConfiguration, credentials: Credentials, registry: NamespaceRegistry) {
        self.configuration = configuration
        self.credentials = credentials
        self.registry = registry
        self.defaultPolicy = registry.defaultPolicy
        self.defaultRulesSource = registry.defaultRulesSource
    }

    /// The namespace, or nil when it does not exist and `create` is false. Bad names are a 400.
    func namespace(_ name: String, create: Bool) throws -> Namespace? {
        guard DataDirectory.isValidNamespace(name) else {
            throw RESTError(400, "Invalid namespace '\(name)': use 1 to 63 letters, digits, '_' or '-'.")
        }
        do {
            return try registry.namespace(name, create: create)
        } catch let error as NamespaceUnavailable {
            throw RESTError(error.isTransient ? 503 : 500, error.userMessage)
        } catch let error as StoreError {
            Logger(label: "canopy.store").error("ns.open_failed", ["ns": name, "error": error.userMessage])
            throw RESTError(500, "The database for namespace '\(name)' could not be opened.")
        } catch let error as any CanopyError {
            throw RESTError(400, error.userMessage)
        }
    }

    /// Runs `body` at once, or, when the request's namespace has a file whose tree is not loaded, once it is
    /// loaded on a store thread (every other namespace is served meanwhile). A load that fails or takes too long
    /// answers the request itself: 503 (or 500 when the file cannot be opened) with `{"error": ...}`.
    func whenNamespaceReady(for request: HTTPRequest, _ responder: HTTPResponder, _ body: @escaping () -> Void) {
        // Handlers read parameters first-wins (long polling) or last-wins (REST): every `ns` given is made ready.
        var names: [String] = request.query.filter { $0.name == "ns" && !$0.value.isEmpty }.map(\.value)
        if names.isEmpty, let name = try? namespaceName(request, params: [:]) { names = [name] }
        guard let name = names.first(where: { DataDirectory.isValidNamespace($0) && registry.mustWait(for: $0) })
        else { return body() }
        registry.whenOpen(name, create: false) { [weak self] result in
            switch result {
            case .success: self?.whenNamespaceReady(for: request, responder, body)
            case .failure(let error as NamespaceUnavailable):
                responder.respond(.error(RESTError(error.isTransient ? 503 : 500, error.userMessage)))
            case .failure(let error):
                responder.respond(.error(RESTError(500, (error as? any CanopyError)?.userMessage ?? "Internal error.")))
            }
        }
    }

    /// `?ns=`, else the first label of a `<ns>.<host>` Host header, else the default namespace.
    func namespaceName(_ request: HTTPRequest, params: [String: String]) throws -> String {
        if let ns = params["ns"], !ns.isEmpty { return ns }
        if let host = request.header("host") {
            let name = host.split(separator: ":").first.map(String.init) ?? host
            let labels = name.split(separator: ".")
            if labels.count >= 2, labels.last == "localhost" || labels.count >= 3,
                !name.allSatisfy({ $0.isNumber || $0 == "." })
            {
                return String(labels[0])
            }
        }
        return configuration.defaultNamespace
    }

    func identify(_ request: HTTPRequest, params: [String: String], namespace: String) throws -> Identity {
        var bearer: String?
        if let header = request.header("authorization") {
            let parts = header.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { bearer = String(parts[1]) }
        }
        do {
            return try credentials.identify(
                bearer: bearer, authParam: params["auth"] ?? params["access_token"],
                override: params["auth_variable_override"], namespace: namespace)
        } catch {
            throw RESTError(401, error.userMessage)
        }
    }
}
