// NamespaceUnavailable -- why a request for a namespace could not be served while its tree was being loaded.

import CanopyCore

/// A namespace whose file exists but whose tree is not in memory (yet): it is loaded on a store thread, and the
/// requests that arrive meanwhile wait for it, within bounds.
public enum NamespaceUnavailable: CanopyError {
    /// The tree is still loading (a caller that cannot wait asked for it).
    case loading(namespace: String)
    /// The tree did not load within the wait limit (`ServerConfiguration.namespaceLoadTimeoutMilliseconds`).
    case timedOut(namespace: String, milliseconds: Int)
    /// Too many requests are already waiting for this namespace to load.
    case tooManyWaiting(namespace: String)
    /// The file could not be opened or read.
    case failed(namespace: String, reason: String)

    public var code: String {
        switch self {
        case .failed: "namespace_failed"
        default: "namespace_loading"
        }
    }

    public var userMessage: String {
        switch self {
        case .loading(let name): "Namespace '\(name)' is loading; try again shortly."
        case .timedOut(let name, let ms): "Namespace '\(name)' did not finish loading within \(ms) ms; try again."
        case .tooManyWaiting(let name): "Too many requests are waiting for namespace '\(name)' to load; try again."
        case .failed(let name, _): "The database for namespace '\(name)' could not be opened."
        }
    }

    public var description: String { "NamespaceUnavailable(\(code)): \(userMessage)" }

    /// Whether trying again later may succeed (HTTP 503) rather than the file being unusable (500).
    public var isTransient: Bool {
        if case .failed = self { return false }
        return true
    }
}
