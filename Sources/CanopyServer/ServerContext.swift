// ServerContext -- what the request handlers share: configuration, credentials, namespaces, push IDs.

import CanopyCore
import CanopyNet
import CanopyStore

/// The realtime layer (SSE, WebSocket, long polling), plugged into the REST handler.
protocol RealtimeService: AnyObject {
    /// Whether this request is a realtime transport (`/.ws`, `/.lp`).
    func handles(_ request: HTTPRequest) -> Bool
    func handle(_ request: HTTPRequest, _ responder: HTTPResponder)
    /// Opens a WebSocket at once while its namespace loads (true), or does nothing (false).
    func openEarly(_ request: HTTPRequest, _ responder: HTTPResponder) -> Bool
    /// `GET` with `Accept: text/event-stream`.
    func startEventStream(_ request: DataRequest, _ responder: HTTPResponder, early: EarlyTree?) throws
    /// The namespace's rules were replaced: re-check every listener.
    func rulesChanged(in namespace: Namespace)
    /// The daemon is draining: end what would otherwise hold the drain open (long polls the server is holding),
    /// tell WebSocket clients to reconnect once their writes are durable, then call `done`.
    func shuttingDown(then done: @escaping () -> Void)
}

/// Shared state of the request handlers. Loop-confined.
final class ServerContext {
    let configuration: ServerConfiguration
    let credentials: Credentials
    let registry: NamespaceRegistry
    let pushIDs = PushIDSource()
    var realtime: (any RealtimeService)?
    /// The daemon's listening server (for the metrics export's connection figures); set once it is bound.
    weak var server: HTTPServer?
    /// Set when the daemon begins to drain (SIGTERM): `/.canopy/ready` answers 503 from then on.
    var isDraining = false
    /// A data-directory probe under way for `/.canopy/ready`, with the requests waiting for it.
    var readinessWaiters: [(String?) -> Void] = []
    var readinessProbeID: UInt64 = 0
    var readinessTimer: TimerHandle?
    let defaultPolicy: any AccessPolicy
    let defaultRulesSource: String

    /// The loop every handler runs on (timers: a read's `timeout`).
    let loop: EventLoop
    /// Runs CPU-heavy request work on the compute thread (parsing a large body); nil runs it on the loop.
    var compute: ((@escaping @Sendable () -> Void) -> Void)?

    init(configuration: ServerConfiguration, credentials: Credentials, registry: NamespaceRegistry, loop: EventLoop) {
        self.configuration = configuration
        self.loop = loop
        self.credentials = credentials
        self.registry = registry
        self.defaultPolicy = registry.defaultPolicy
        self.defaultRulesSource = registry.defaultRulesSource
    }

    /// The decision on a request that reads or administers `name`: by its policy when the namespace is open, else by
    /// the default policy over an empty tree (a namespace that is not open holds nothing).
    func authorize(
        _ operation: AccessOperation, at path: Path, as identity: Identity, in name: String, namespace: Namespace?,
        now: Int64, early: EarlyTree? = nil
    ) -> AccessDecision {
        let decision = (early?.policy ?? namespace?.policy ?? defaultPolicy).authorize(
            operation, at: path, as: identity, in: name, old: early?.root ?? namespace?.root ?? .empty, new: nil,
            now: now, coverage: early?.coverage)
        if !decision.allowed, early?.coverage.missed != true { registry.metrics.countDenial(operation) }
        return decision
    }

    /// The namespace `name`, opened (empty and without a file when it is new) on first use.
    func namespace(_ name: String, whileRulesFail: Bool = false) throws(NamespaceError) -> Namespace {
        guard let namespace = try namespace(name, create: true, whileRulesFail: whileRulesFail) else {
            preconditionFailure("created on demand")
        }
        return namespace
    }

    /// The namespace, or nil when it does not exist and `create` is false. A namespace whose saved rules cannot be
    /// loaded is refused (`.rulesUnavailable`, naming the problem) unless `whileRulesFail`: the rules endpoint,
    /// which repairs it, and the realtime transports, whose sessions refuse each request instead.
    func namespace(_ name: String, create: Bool, whileRulesFail: Bool = false) throws(NamespaceError) -> Namespace? {
        guard DataDirectory.isValidNamespace(name) else { throw .invalidName(name) }
        let namespace: Namespace?
        do {
            namespace = try registry.namespace(name, create: create)
        } catch let error as NamespaceUnavailable {
            throw .openFailed(error.userMessage, transient: error.isTransient)
        } catch let error as StoreError {
            Logger(label: "canopy.store").error("ns.open_failed", ["ns": name, "error": error.userMessage])
            throw .unavailable(name)
        } catch {
            Logger(label: "canopy.store").error("ns.open_failed", ["ns": name, "error": "\(error)"])
            throw .unavailable(name)
        }
        if !whileRulesFail, let failure = namespace?.rulesFailure { throw .rulesUnavailable(failure) }
        return namespace
    }

    /// Runs `body` at once, or, when the request's namespace has a file whose tree is not loaded, once it is
    /// loaded on a store thread (every other namespace is served meanwhile). A load that fails or takes too long
    /// answers the request itself: 503 (or 500 when the file cannot be opened) with `{"error": ...}`.
    func whenNamespaceReady(for request: HTTPRequest, _ responder: HTTPResponder, _ body: @escaping () -> Void) {
        // Handlers read parameters first-wins (long polling) or last-wins (REST): every `ns` given is made ready.
        var names: [String] = request.query.filter { $0.name == "ns" && !$0.value.isEmpty }.map(\.value)
        if names.isEmpty, let name = try? namespaceName(request, params: [:]) { names = [name] }
        // Cluster mode: a replica answers reads and listens; every other request goes to the owner.
        if registry.cluster != nil, request.method != "GET", request.path != "/.ws", request.path != "/.lp",
            let name = names.first, let namespace = registry.open[name], let replica = namespace.replica,
            let owner = replica.currentOwnerURL.withLock({ $0 }) ?? namespace.replicaOwnerURL
        {
            return redirect(request, responder, to: owner)
        }
        guard let name = names.first(where: { DataDirectory.isValidNamespace($0) && registry.mustWait(for: $0) })
        else { return body() }
        registry.whenOpen(name, create: false) { [weak self] result in
            // A read answered from the file meanwhile (RESTEarlyRead) needs nothing more, not even a failure.
            guard !responder.hasAnswered else { return }
            switch result {
            case .success: self?.whenNamespaceReady(for: request, responder, body)
            case .failure(NamespaceUnavailable.elsewhere(_, _, let url)):
                self?.redirect(request, responder, to: url)
            case .failure(let error):
                Self.answerLoadFailure(error, responder)
            }
        }
    }

    /// Answers a request whose namespace could not be loaded: 503 (or 500 when its file cannot be opened).
    static func answerLoadFailure(_ error: any Error, _ responder: HTTPResponder) {
        if let error = error as? NamespaceUnavailable {
            responder.respond(.error(NamespaceError.openFailed(error.userMessage, transient: error.isTransient)))
        } else {
            responder.respond(.error(error))
        }
    }

    /// Cluster mode: sends a request for a namespace another node owns to that node
    /// (Cluster.md#How-a-client-reaches-its-node). A WebSocket gets the wire protocol's reset naming the owner's host, as Firebase
    /// redirects (the SDKs reconnect there); REST and SSE requests are proxied to the owner (`ClusterProxy`).
    func redirect(_ request: HTTPRequest, _ responder: HTTPResponder, to url: String) {
        let host = ClusterConfiguration.host(of: url)
        if request.path == "/.ws", request.header("upgrade")?.lowercased() == "websocket" {
            guard let socket = responder.upgradeToWebSocket(request) else { return }
            var text: [UInt8] = []
            Wire.control(Wire.Control.reset, .string(host)).write(into: &text)
            socket.send(text: String(decoding: text, as: UTF8.self))
            socket.close(code: 1000, reason: "served by \(host)")
            return
        }
        if request.header(ClusterProxy.forwardedHeader) != nil {
            // Forwarded here by a node that believed this one owns the namespace: the two disagree for a moment.
            return responder.respond(
                HTTPResponse.error(status: 503, message: "The namespace is moving between nodes; try again."))
        }
        guard configuration.cluster?.proxiesREST ?? false, let proxy else {
            return responder.respond(ClusterProxy.redirect(request, to: url))
        }
        proxy.forward(request, responder, to: url, loop: loop)
    }

    /// Cluster mode: forwards REST and SSE requests for namespaces other nodes own.
    var proxy: ClusterProxy?

    /// `?ns=`, else the first label of a `<ns>.<host>` Host header, else the default namespace.
    func namespaceName(_ request: HTTPRequest, params: [String: String]) throws(NamespaceError) -> String {
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

    /// The credential of an `Authorization: Bearer <credential>` value (the scheme in any case), or nil.
    ///
    /// The usual form, the scheme, one space and a credential, is read in place; anything else goes through the
    /// general split (a generic `split` and `lowercased` on every request were 2 % of a REST write's loop time).
    static func bearerCredential(_ header: String) -> String? {
        let scheme = "bearer ".utf8
        let utf8 = header.utf8
        if utf8.count > scheme.count,
            let usual = utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
                for (index, expected) in scheme.enumerated() {
                    let byte = bytes[index]
                    guard byte == expected || (byte >= 0x41 && byte <= 0x5A && byte | 0x20 == expected) else {
                        return false
                    }
                }
                return bytes[scheme.count] != UInt8(ascii: " ")
            }), usual
        {
            // The scheme is ASCII, so the rest starts on a character boundary.
            if let credential = String(header.utf8.dropFirst(scheme.count)) { return credential }
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        return parts.count == 2 && parts[0].lowercased() == "bearer" ? String(parts[1]) : nil
    }

    func identify(_ request: HTTPRequest, params: [String: String], namespace: String) throws(CredentialError)
        -> Identity
    {
        var bearer: String?
        if let header = request.header("authorization") { bearer = Self.bearerCredential(header) }
        do {
            return try credentials.identify(
                bearer: bearer, authParam: params["auth"] ?? params["access_token"],
                override: params["auth_variable_override"], namespace: namespace)
        } catch {
            throw error
        }
    }
}

/// Why a namespace could not be had for a request.
enum NamespaceError: CanopyError {
    /// The name is not a valid namespace name.
    case invalidName(String)
    /// Its database could not be opened (the log says why).
    case unavailable(String)
    /// Its tree could not be loaded (`transient`: the load is slow or the store threads are busy; retry later).
    case openFailed(String, transient: Bool)
    /// Its saved security rules cannot be read or parsed: it refuses service (the message says why and how to fix).
    case rulesUnavailable(String)

    var code: String {
        switch self {
        case .invalidName: "invalid_namespace"
        case .unavailable: "namespace_unavailable"
        case .openFailed: "namespace_unavailable"
        case .rulesUnavailable: "rules_unavailable"
        }
    }

    var userMessage: String {
        switch self {
        case .invalidName(let name): "Invalid namespace '\(name)': use 1 to 63 letters, digits, '_' or '-'."
        case .unavailable(let name): "The database for namespace '\(name)' could not be opened."
        case .openFailed(let message, _): message
        case .rulesUnavailable(let message): message
        }
    }

    var description: String { "NamespaceError(\(code)): \(userMessage)" }
}
