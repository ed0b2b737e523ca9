// HTTPParseError -- why a request could not be parsed, and the HTTP status that answers it.
import CanopyCore

/// A request the HTTP/1.1 parser refuses. The connection answers with ``status`` and closes.
///
/// Reasons are fixed descriptions of the rule that was broken; they never quote request bytes.
public enum HTTPParseError: CanopyError, Equatable {
    /// The bytes are not a valid HTTP/1.x request (400).
    case malformed(reason: String)
    /// The request line and headers (or trailers) exceed the byte or count limit (431).
    case headersTooLarge
    /// The declared or accumulated body exceeds the body limit (413).
    case bodyTooLarge
    /// The request uses an HTTP major version other than 1 (505).
    case versionNotSupported

    /// The HTTP status code that answers this error.
    public var status: Int {
        switch self {
        case .malformed: 400
        case .headersTooLarge: 431
        case .bodyTooLarge: 413
        case .versionNotSupported: 505
        }
    }

    public var code: String {
        switch self {
        case .malformed: "bad_request"
        case .headersTooLarge: "headers_too_large"
        case .bodyTooLarge: "payload_too_large"
        case .versionNotSupported: "http_version_not_supported"
        }
    }

    public var userMessage: String {
        switch self {
        case .malformed(let reason): "Malformed HTTP request: \(reason)."
        case .headersTooLarge: "Request headers too large."
        case .bodyTooLarge: "Request body too large."
        case .versionNotSupported: "HTTP version not supported."
        }
    }
}
