// ClientError -- why a client operation (listen, write, transaction, onDisconnect) failed.

import CanopyCore

/// A failure reported by the client SDK. Carries paths and server status strings, never data values or tokens.
public enum ClientError: CanopyError, Equatable {
    /// The server refused the operation under its security rules (`permission_denied`).
    case permissionDenied(path: String)
    /// The server answered with another non-`ok` status (`failure`, `too_big`, ...) and its message.
    case rejected(path: String, status: String, message: String)
    /// The value cannot be stored (invalid key, nesting too deep, bad server value, ...).
    case invalidData(path: String, reason: String)
    /// The connection dropped while the operation was in flight and it cannot be safely resent (a transaction,
    /// an onDisconnect registration, or a write containing a server increment); it may or may not have applied.
    case disconnected(path: String)
    /// A transaction was answered `datastale` too many times.
    case maxRetries(path: String)
    /// The database was closed.
    case closed
    /// The local cache file could not be opened or written.
    case storage(reason: String)
    /// The database URL is not usable (scheme, host or port).
    case invalidURL(reason: String)
    /// No value arrived in time: offline with nothing cached for the location, or the server did not answer.
    case timedOut(path: String)
    /// TLS could not be set up: the CA file cannot be read (a refused server certificate is a connection error).
    case tls(reason: String)

    public var code: String {
        switch self {
        case .permissionDenied: Wire.Status.permissionDenied
        case .rejected(_, let status, _): status
        case .invalidData: "invalid_data"
        case .disconnected: "disconnected"
        case .maxRetries: "maxretry"
        case .closed: "closed"
        case .storage: "storage_failed"
        case .invalidURL: "invalid_url"
        case .timedOut: "timed_out"
        case .tls: "tls"
        }
    }

    public var userMessage: String {
        switch self {
        case .permissionDenied(let path): "Permission denied at \(path)."
        case .rejected(let path, let status, let message): "The server refused the operation at \(path) (\(status)): \(message)"
        case .invalidData(let path, let reason): "Invalid data at \(path): \(reason)"
        case .disconnected(let path): "The connection dropped while the operation at \(path) was in flight."
        case .maxRetries(let path): "The transaction at \(path) was retried too many times."
        case .closed: "The database is closed."
        case .storage(let reason): "The local cache failed: \(reason)"
        case .invalidURL(let reason): "Unusable database URL: \(reason)"
        case .timedOut(let path): "No value for \(path) arrived in time (offline with nothing cached?)."
        case .tls(let reason): "TLS is unusable: \(reason)"
        }
    }

    /// The error for a non-`ok` server status on an operation at `path`.
    static func from(status: String, message: String, path: Path) -> ClientError {
        status == Wire.Status.permissionDenied
            ? .permissionDenied(path: path.description) : .rejected(path: path.description, status: status, message: message)
    }
}
