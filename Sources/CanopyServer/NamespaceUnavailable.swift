// NamespaceUnavailable -- why a request for a namespace could not be served while its tree was being loaded.

import CanopyCore
import CanopyStore

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
    /// Committed writes are missing from the file (its WAL was deleted, truncated or damaged; see
    /// `CommitSequenceFile`): the namespace refuses service until the operator restores its files or accepts the
    /// loss with `canopy serve --accept-data-loss <namespace>`. `expected` is nil when the record itself is damaged.
    case dataLoss(namespace: String, expected: UInt64?, found: UInt64)
    /// Cluster mode: another node owns the namespace (`url`, its advertised address); clients are sent there.
    case elsewhere(namespace: String, node: String, url: String)
    /// Cluster mode: this node's lease is not valid (NATS unreachable, or the process was paused); it serves
    /// nothing it owned until the lease is renewed or another node owns the namespace.
    case leaseExpired(namespace: String)
    /// Cluster mode: the namespace's log was trimmed below every snapshot that can be read (they are missing or
    /// fail their hash): its tree cannot be rebuilt whole, so it is not served at all (Cluster.md#Snapshots).
    case logTrimmed(namespace: String, detail: String)

    public var code: String {
        switch self {
        case .failed: "namespace_failed"
        case .dataLoss: "namespace_data_loss"
        case .elsewhere: "namespace_elsewhere"
        case .leaseExpired: "cluster_lease_expired"
        case .logTrimmed: "cluster_log_trimmed"
        default: "namespace_loading"
        }
    }

    public var userMessage: String {
        switch self {
        case .loading(let name): "Namespace '\(name)' is loading; try again shortly."
        case .timedOut(let name, let ms): "Namespace '\(name)' did not finish loading within \(ms) ms; try again."
        case .tooManyWaiting(let name): "Too many requests are waiting for namespace '\(name)' to load; try again."
        case .failed(let name, _): "The database for namespace '\(name)' could not be opened."
        case .elsewhere(let name, _, let url): "Namespace '\(name)' is served by \(url)."
        case .leaseExpired(let name):
            "Namespace '\(name)' is unavailable on this node: its cluster lease is not valid; try again shortly."
        case .logTrimmed(let name, let detail):
            "Namespace '\(name)' refuses service: \(detail). Its writes before that point are only in its snapshots"
                + " (stream CANOPY_SNAP), none of which can be read whole: restore that stream to serve it."
        case .dataLoss(let name, let expected?, let found):
            "Namespace '\(name)' refuses service: committed writes are missing from its database (expected revision"
                + " \(expected), found revision \(found): the last \(expected - found) commits are lost; its"
                + " write-ahead log was deleted, truncated or damaged). Restore its files from a backup, or restart with"
                + " 'canopy serve --accept-data-loss \(name)' to serve what was recovered."
        case .dataLoss(let name, nil, let found):
            "Namespace '\(name)' refuses service: the record of its last committed revision is damaged, so missing"
                + " writes cannot be ruled out (found revision \(found)). Restore its files from a backup, or restart"
                + " with 'canopy serve --accept-data-loss \(name)' to serve what was recovered."
        }
    }

    public var description: String { "NamespaceUnavailable(\(code)): \(userMessage)" }

    /// Whether the namespace may be served later (HTTP 503: after a wait, or once the operator acted on a loss)
    /// rather than the file being unusable (500).
    public var isTransient: Bool {
        if case .failed = self { return false }
        return true
    }

    /// The error for a store that could not be opened.
    static func opening(_ namespace: String, _ error: any Error) -> NamespaceUnavailable {
        if let error = error as? StoreError, error.kind == .dataLoss {
            return .dataLoss(
                namespace: namespace, expected: error.missing?.expected, found: error.missing?.found ?? 0)
        }
        return .failed(namespace: namespace, reason: (error as? any CanopyError)?.userMessage ?? "\(error)")
    }
}
