// HTTPRequest -- one complete parsed request: method, target (raw and decoded), headers, body.

/// An HTTP protocol version such as 1.1.
public struct HTTPVersion: Sendable, Equatable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }
    public static let http10 = HTTPVersion(major: 1, minor: 0)
    public static let http11 = HTTPVersion(major: 1, minor: 1)
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// A complete request with its body fully received.
public struct HTTPRequest: Sendable {
    /// The method as sent, upper-cased (`GET`, `PUT`, ...).
    public var method: String
    /// The request target exactly as sent (origin-form or absolute-form).
    public var target: String
    /// The path, percent-decoded exactly once (RFC 3986); `+` stays `+`.
    public var path: String
    /// The path as sent, before decoding.
    public var rawPath: String
    /// Query parameters in order, names and values decoded once; `+` stays `+`.
    public var query: [(name: String, value: String)]
    /// The header fields.
    public var headers: HTTPHeaders
    /// The body, de-chunked.
    public var body: [UInt8]
    /// The protocol version of the request line.
    public var version: HTTPVersion
    /// Whether the connection stays open after the response (HTTP/1.1 unless `Connection: close`;
    /// HTTP/1.0 only with `Connection: keep-alive`).
    public var keepAlive: Bool
    /// The peer as `address:port` (`[v6]:port` for IPv6); empty for requests not read from a socket.
    public var remoteAddress: String
    /// The body's share of the server's ``BodyMemoryBudget``: given back once every copy of the request (and of
    /// this charge) is gone. A handler that keeps the request long after reading its body should drop both.
    public var bodyCharge: BodyCharge?

    /// Creates a request; used by the parser and by tests that drive handlers directly.
    public init(
        method: String, target: String, path: String, rawPath: String, query: [(name: String, value: String)],
        headers: HTTPHeaders, body: [UInt8] = [], version: HTTPVersion = .http11, keepAlive: Bool = true,
        remoteAddress: String = ""
    ) {
        self.method = method
        self.target = target
        self.path = path
        self.rawPath = rawPath
        self.query = query
        self.headers = headers
        self.body = body
        self.version = version
        self.keepAlive = keepAlive
        self.remoteAddress = remoteAddress
    }

    /// The value of the first header called `name` (ASCII case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first(name)
    }

    /// The value of the first query parameter called `name` (case-sensitive), decoded.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }
}
