// RESTError -- an HTTP status plus the Firebase-style `{"error": "..."}` body, for what only HTTP can get wrong
// (an unknown endpoint, a method, a header). Errors of the lower layers map through `HTTPResponseError`.

import CanopyCore
import CanopyNet

/// An error answered to a REST client.
public struct RESTError: CanopyError {
    public let status: Int
    public let message: String
    public var code: String { "http_\(status)" }
    public var userMessage: String { message }

    public init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }

    public static let permissionDenied = RESTError(401, "Permission denied")
}

/// Headers every JSON answer carries (CORS as Firebase sends it, so browser pages can call the API).
let commonHeaders: [(String, String)] = [
    ("Access-Control-Allow-Origin", "*"),
    ("Cache-Control", "no-cache"),
]

extension HTTPResponse {
    /// A JSON response.
    static func json(_ status: Int, _ value: JSONValue, pretty: Bool = false, extraHeaders: [(String, String)] = [])
        -> HTTPResponse
    {
        var body: [UInt8] = []
        value.write(into: &body, pretty: pretty)
        return json(status, body: body, extraHeaders: extraHeaders)
    }

    /// A JSON response whose body is already serialized.
    static func json(_ status: Int, body: [UInt8], extraHeaders: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: [("Content-Type", "application/json; charset=utf-8")] + commonHeaders + extraHeaders,
            body: body)
    }

    /// An empty response (204 for `print=silent`, 304 for `If-None-Match`).
    static func empty(_ status: Int, extraHeaders: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: commonHeaders + extraHeaders, body: [])
    }
}
