// HTTPResponseError -- how the errors of the lower layers become HTTP answers. Errors carry facts; the status and
// the Firebase-style `{"error": "..."}` body are chosen here, where HTTP lives.

import CanopyAuth
import CanopyCore
import CanopyNet
import CanopyPublish
import CanopyRules
import CanopyStore

/// An error with an HTTP answer.
protocol HTTPResponseError: Error {
    /// The status code.
    var status: Int { get }
    /// The `error` member of the body: one sentence for the client, no internals.
    var clientMessage: String { get }
    /// The whole answer; by default `{"error": clientMessage}` with `status`.
    var httpResponse: HTTPResponse { get }
}

extension HTTPResponseError {
    var httpResponse: HTTPResponse { .json(status, .object([JSONMember("error", .string(clientMessage))])) }
}

extension HTTPResponseError where Self: CanopyError {
    var clientMessage: String { userMessage }
}

extension RESTError: HTTPResponseError {
    var clientMessage: String { message }
}

extension WriteError: HTTPResponseError {
    var status: Int {
        switch self {
        case .invalidData: 400
        case .permissionDenied: 401
        case .conditionFailed: 412
        case .publish(let error): error.status
        case .storageFailed: 500
        case .conflict: 409
        }
    }

    /// A failed condition answers the current value and its ETag, as Firebase does for `if-match`.
    var httpResponse: HTTPResponse {
        if case .conditionFailed(let current, _) = self {
            return .json(412, current.json(), extraHeaders: [("ETag", current.etag)])
        }
        if case .publish(let error) = self, error.kind == .incomplete {
            return .json(
                status,
                .object([
                    JSONMember("error", .string(clientMessage)),
                    JSONMember("incomplete", .array(error.incomplete.map(\.json))),
                ]))
        }
        return .json(status, .object([JSONMember("error", .string(clientMessage))]))
    }
}

extension PublishError: HTTPResponseError {
    var status: Int {
        switch kind {
        case .unknownItem, .notPublished, .unknownHistoryEntry: 404
        default: 400
        }
    }
}

extension NamespaceError: HTTPResponseError {
    var status: Int {
        switch self {
        case .invalidName: 400
        case .unavailable: 500
        case .openFailed(_, let transient): transient ? 503 : 500
        case .rulesUnavailable: 503
        }
    }
}

extension CredentialError: HTTPResponseError {
    var status: Int { 401 }
}

/// Malformed request bodies, paths, queries and rules are the client's to fix.
extension JSONParseError: HTTPResponseError { var status: Int { 400 } }
extension DataError: HTTPResponseError { var status: Int { 400 } }
extension QueryError: HTTPResponseError { var status: Int { 400 } }
extension RulesError: HTTPResponseError {
    var status: Int { 400 }

    /// `{"error", "path", "line"?, "column"?}`: the console shows the error at its place in the text.
    var httpResponse: HTTPResponse {
        var members = [JSONMember("error", .string(userMessage)), JSONMember("path", .string(path))]
        if let at = sourceLocation {
            members.append(JSONMember("line", .int(Int64(at.line))))
            members.append(JSONMember("column", .int(Int64(at.column))))
        }
        return .json(400, .object(members))
    }
}
extension ExportDocumentError: HTTPResponseError { var status: Int { 400 } }

/// A storage failure is the server's (a full disk included): 500, and nothing was changed.
extension StoreError: HTTPResponseError {
    var status: Int { 500 }
    var clientMessage: String { "The database could not store this change; nothing was changed." }
}

extension HTTPResponse {
    /// The answer to any error thrown while handling a request.
    static func error(_ error: any Error) -> HTTPResponse {
        if let known = error as? any HTTPResponseError { return known.httpResponse }
        if let canopy = error as? any CanopyError { return RESTError(400, canopy.userMessage).httpResponse }
        return RESTError(500, "Internal error.").httpResponse
    }
}
