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
        } catch let error as StoreError {
            Logger(label: "canopy.store").error("ns.open_failed", ["ns": name, "error": error.userMessage])
            throw RESTError(500, "The database for namespace '\(name)' could not be opened.")
        } catch let error as any CanopyError {
            throw RESTError(400, error.userMessage)
        }
    }
}
