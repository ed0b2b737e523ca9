// HTTPResponse -- a complete response value, and its serialization as HTTP/1.1 bytes.

/// A complete response: status, header fields and body.
///
/// The server writes `Content-Length` (except for 1xx/204/304) and `Connection` itself; fields with
/// those names, and `Transfer-Encoding`, are dropped from ``headers``. It adds `Date` unless ``headers`` has one.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON error response, `{"error":"<message>"}`, as Firebase sends them.
    public static func error(status: Int, message: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json; charset=utf-8")],
            body: Array("{\"error\":\(jsonString(message))}".utf8))
    }

    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Turns responses into wire bytes.
enum HTTPResponseWriter {
    /// How the connection continues after a response; decides the `Connection` field.
    enum Persistence {
        /// HTTP/1.1 keep-alive: no `Connection` field.
        case keepAlive
        /// HTTP/1.0 keep-alive: `Connection: keep-alive`.
        case keepAliveHTTP10
        /// The server closes after this response: `Connection: close`.
        case close
    }

    private static let framingFields = ["content-length", "connection", "transfer-encoding"]

    /// Serializes a complete response.
    /// - Parameter date: the `Date` field's value (the current second by default); nil leaves it out.
    static func bytes(for response: HTTPResponse, persistence: Persistence, date: [UInt8]? = HTTPDate.now())
        -> [UInt8]
    {
        var out: [UInt8] = []
        out.reserveCapacity(128 + response.body.count)
        appendHead(status: response.status, headers: response.headers, date: date, to: &out)
        let bodiless = response.status < 200 || response.status == 204 || response.status == 304
        if !bodiless {
            out.append(contentsOf: "Content-Length: ".utf8)
            appendDecimal(response.body.count, to: &out)
            out.append(contentsOf: crlf)
        }
        appendConnection(persistence, to: &out)
        out.append(contentsOf: crlf)
        if !bodiless { out.append(contentsOf: response.body) }
        return out
    }

    /// Serializes the head of a close-delimited stream (no length; `Connection: close`).
    static func streamHead(status: Int, headers: [(String, String)], date: [UInt8]? = HTTPDate.now()) -> [UInt8] {
        var out: [UInt8] = []
        appendHead(status: status, headers: headers, date: date, to: &out)
        appendConnection(.close, to: &out)
        out.append(contentsOf: crlf)
        return out
    }

    static let continueBytes = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private static let crlf: [UInt8] = [0x0D, 0x0A]

    private static func appendHead(
        status: Int, headers: [(String, String)], date: [UInt8]?, to out: inout [UInt8]
    ) {
        // Byte by byte, without a String or an array per field: building a small answer's head was 6 % of a
        // REST write's loop time.
        out.append(contentsOf: "HTTP/1.1 ".utf8)
        appendDecimal(status, to: &out)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: reasonPhrase(status).utf8)
        out.append(contentsOf: crlf)
        var hasDate = false
        for (name, value) in headers {
            if framingFields.contains(where: { HTTPHeaders.namesEqual($0, name) }) { continue }
            hasDate = hasDate || HTTPHeaders.namesEqual(name, "date")
            appendField(name, value, to: &out)
        }
        if let date, !hasDate {
            out.append(contentsOf: "Date: ".utf8)
            out.append(contentsOf: date)
            out.append(contentsOf: crlf)
        }
    }

    /// Appends an integer's decimal digits.
    private static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        guard value >= 0 else { return out.append(contentsOf: String(value).utf8) }
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    private static func appendConnection(_ persistence: Persistence, to out: inout [UInt8]) {
        switch persistence {
        case .keepAlive: break
        case .keepAliveHTTP10: appendField("Connection", "keep-alive", to: &out)
        case .close: appendField("Connection", "close", to: &out)
        }
    }

    /// Appends `name: value` CRLF, dropping CR, LF and NUL so no caller can split the response.
    private static func appendField(_ name: String, _ value: String, to out: inout [UInt8]) {
        appendFiltered(name, droppingColons: true, to: &out)
        out.append(UInt8(ascii: ":"))
        out.append(UInt8(ascii: " "))
        appendFiltered(value, droppingColons: false, to: &out)
        out.append(contentsOf: crlf)
    }

    /// Appends `text` without CR, LF and NUL (and ':' when `droppingColons`): at once when it has none, as the
    /// server's own fields never do, else byte by byte.
    private static func appendFiltered(_ text: String, droppingColons: Bool, to out: inout [UInt8]) {
        let unsafe: (UInt8) -> Bool = { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 || (droppingColons && $0 == 0x3A) }
        if !text.utf8.contains(where: unsafe) {
            out.append(contentsOf: text.utf8)
            return
        }
        for byte in text.utf8 where !unsafe(byte) { out.append(byte) }
    }

    /// The standard reason phrase for `status` (RFC 9110), or "Unknown".
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 417: "Expectation Failed"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Unknown"
        }
    }
}
