// HTTPClient -- a small blocking HTTP/1.1 client over one keep-alive TCP connection (CLI tools, benchmarks, tests).

import CCanopyLinux
import CanopyCore

#if canImport(Glibc)
    import Glibc
#endif

/// A failed client request: connection refused, timeout, malformed response.
public struct HTTPClientError: CanopyError {
    public let message: String
    public var code: String { "http_client" }
    public var userMessage: String { message }
    public init(_ message: String) { self.message = message }
}

/// A response received by `HTTPClient`.
public struct HTTPClientResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// One blocking HTTP/1.1 connection to `host:port` (over TLS when given a ``TLSClientContext``), reconnecting
/// when the server closed it.
public final class HTTPClient {
    public let host: String
    public let port: Int
    public var timeoutSeconds: Int
    /// Speak HTTPS, verifying the server against this context and ``host``; nil for plain HTTP.
    public let tls: TLSClientContext?
    /// The name the server's certificate must carry (the URL's host; `localhost` stays a name).
    private let verifiedHost: String
    private var session: TLSSession?
    /// The local IPv4 address connections are made from (nil: the system's choice). Tests use 127.0.0.2, 127.0.0.3 …
    /// to appear as different clients.
    public var sourceAddress: String?
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    /// True once a byte of the current request's response arrived (see ``requestOnce(_:_:headers:body:)``).
    public private(set) var receivedResponseBytes = false
    /// The largest Content-Length or chunk size accepted from a server (1 TiB: any real body, and far from
    /// the `Int` arithmetic on it overflowing).
    static let maxBodyBytes = 1 << 40

    public init(host: String, port: Int, timeoutSeconds: Int = 30, tls: TLSClientContext? = nil) {
        self.verifiedHost = host
        self.host = host == "localhost" ? "127.0.0.1" : host
        self.port = port
        self.timeoutSeconds = timeoutSeconds
        self.tls = tls
    }

    deinit { close() }

    /// Parses `http://host:port` or `https://host:port` (path and query ignored); `https` verifies the server
    /// against `caFile` (PEM), or the system's CA store when nil.
    public convenience init(url: String, timeoutSeconds: Int = 30, caFile: String? = nil) throws {
        let secure = url.hasPrefix("https://")
        guard secure || url.hasPrefix("http://") else {
            throw HTTPClientError("only http:// and https:// URLs are supported: \(url)")
        }
        let rest = url.dropFirst(secure ? "https://".count : "http://".count)
        let authority = rest.split(separator: "/", maxSplits: 1).first.map(String.init) ?? ""
        let hostPart = authority.split(separator: "?").first.map(String.init) ?? authority
        let pieces = hostPart.split(separator: ":")
        guard let host = pieces.first, pieces.count <= 2 else { throw HTTPClientError("bad URL \(url)") }
        let port = pieces.count == 2 ? Int(pieces[1]) : (secure ? 443 : 80)
        guard let port, (1...65535).contains(port) else { throw HTTPClientError("bad port in \(url)") }
        var tls: TLSClientContext?
        do throws(TLSError) {
            if secure, let caFile {
                tls = try TLSClientContext(caFile: caFile)
            } else if secure {
                tls = try TLSClientContext.system.get()
            }
        } catch {
            throw HTTPClientError(error.userMessage)
        }
        self.init(host: String(host), port: port, timeoutSeconds: timeoutSeconds, tls: tls)
    }

    public func close() {
        session?.shutdown()
        session = nil
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        buffer = []
    }

    /// Sends one request and reads the whole response. Retries once on a connection the server had closed.
    public func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> HTTPClientResponse {
        let bytes = Self.requestBytes(method, target, host: host, port: port, headers: headers, body: body)
        let reused = fd >= 0
        do {
            return try exchange(bytes, method: method)
        } catch  where reused {
            close()
            return try exchange(bytes, method: method)
        }
    }

    /// Sends one request and reads the whole response, on the open connection (or a new one), never retrying:
    /// for a caller that must not repeat a request the server may have acted on. On failure the connection is
    /// closed and ``receivedResponseBytes`` says whether any of the response had arrived.
    public func requestOnce(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> HTTPClientResponse {
        let bytes = Self.requestBytes(method, target, host: host, port: port, headers: headers, body: body)
        do {
            return try exchange(bytes, method: method)
        } catch {
            close()
            throw error
        }
    }

    /// True while the connection is open: after a complete response that did not close it (no
    /// `Connection: close`, a length-delimited body), the next request reuses it.
    public var isOpen: Bool { fd >= 0 }

    /// Whether an idle open connection is still usable: the server has not closed it nor sent anything unasked
    /// (`poll` with no wait finds it neither readable nor hung up: a readable idle socket holds an end of file, a
    /// reset, or bytes no request asked for). False when closed.
    public var isIdleAndUsable: Bool {
        guard fd >= 0, buffer.isEmpty else { return false }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    private static func requestBytes(
        _ method: String, _ target: String, host: String, port: Int, headers: [(String, String)], body: [UInt8]
    ) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || ["PUT", "POST", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + body
    }

    private func exchange(_ bytes: [UInt8], method: String) throws -> HTTPClientResponse {
        receivedResponseBytes = false
        try ensureConnected()
        try sendAll(bytes)
        return try readResponse(method: method)
    }

    /// Sends a request and returns once the response head arrived; read the body with `readChunk()`.
    public func openStream(_ target: String, headers: [(String, String)]) throws -> HTTPClientResponse {
        close()
        try ensureConnected()
        var head = "GET \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        try sendAll(Array(head.utf8))
        return try readHead()
    }

    /// Raw bytes of a streamed body as they arrive (chunk framing left in place); empty at end of stream.
    public func readChunk() throws -> [UInt8] {
        if !buffer.isEmpty {
            defer { buffer = [] }
            return buffer
        }
        return try receive()
    }

    // MARK: - internals

    private func ensureConnected() throws {
        if fd >= 0 { return }
        guard let portNumber = UInt16(exactly: port) else { throw HTTPClientError("port \(port) is out of range") }
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw HTTPClientError("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(portNumber.bigEndian)
        do { address.sin_addr = try Self.ipv4Address(of: host) } catch {
            Glibc.close(socketFD)
            throw error
        }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(socketFD, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socketFD, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(socketFD, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if let sourceAddress {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            guard inet_pton(AF_INET, sourceAddress, &local.sin_addr) == 1 else {
                Glibc.close(socketFD)
                throw HTTPClientError("'\(sourceAddress)' is not an IPv4 address")
            }
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                let code = errno
                Glibc.close(socketFD)
                throw HTTPClientError("cannot bind to \(sourceAddress): errno \(code)")
            }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(socketFD)
            throw HTTPClientError(
                code == ECONNREFUSED
                    ? "cannot connect to http://\(host):\(port): connection refused (is 'canopy serve' running?)"
                    : "cannot connect to http://\(host):\(port): errno \(code)")
        }
        fd = socketFD
        buffer = []
        if let tls { try startTLS(tls) }
    }

    /// The IPv4 address of `host`: an address literal as it is, `localhost` and every `*.localhost` name the
    /// loopback address without asking the resolver (RFC 6761 §6.3; glibc without nss-myhostname knows only
    /// `localhost` itself, and a cluster's nodes may advertise `s-node1.localhost`, Cluster.md), any other name
    /// its first IPv4 address from getaddrinfo.
    /// - Throws: `HTTPClientError` naming the host when it has no IPv4 address.
    static func ipv4Address(of host: String) throws -> in_addr {
        var address = in_addr()
        if inet_pton(AF_INET, host, &address) == 1 { return address }
        let name = host.lowercased()
        if name == "localhost" || name.hasSuffix(".localhost") || name.hasSuffix(".localhost.") {
            _ = inet_pton(AF_INET, "127.0.0.1", &address)
            return address
        }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0, let first = list, let found = first.pointee.ai_addr else {
            if let list { freeaddrinfo(list) }
            throw HTTPClientError("cannot resolve '\(host)' to an IPv4 address (getaddrinfo \(rc))")
        }
        defer { freeaddrinfo(list) }
        return found.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
    }

    private func startTLS(_ context: TLSClientContext) throws {
        do {
            session = try TLSSession(client: context, fd: fd, host: verifiedHost)
        } catch {
            close()
            throw HTTPClientError(error.userMessage)
        }
        guard let session else { return }
        switch session.handshake() {
        case .transferred:
            return
        case .wouldBlock:
            close()
            throw HTTPClientError("TLS handshake with \(host):\(port) timed out after \(timeoutSeconds) s")
        case .endOfFile:
            close()
            throw HTTPClientError("TLS handshake with \(host):\(port) failed: the server closed the connection")
        case .failed:
            let reason = session.failureReason
            close()
            throw HTTPClientError("TLS handshake with \(host):\(port) failed: \(reason)")
        }
    }

    private func sendAll(_ bytes: [UInt8]) throws {
        if let session {
            var offset = 0
            while offset < bytes.count {
                let result = bytes.withUnsafeBytes { session.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
                guard case .transferred(let count) = result else {
                    throw HTTPClientError("TLS send failed: \(session.failureReason)")
                }
                offset += count
            }
            return
        }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw HTTPClientError("send failed: errno \(errno)") }
            offset += n
        }
    }

    private func receive() throws -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 65536)
        if let session {
            let result = chunk.withUnsafeMutableBytes { session.read(into: $0) }
            switch result {
            case .transferred(let count):
                if count > 0 { receivedResponseBytes = true }
                return Array(chunk[0..<count])
            case .endOfFile: return []
            case .wouldBlock: throw HTTPClientError("timed out after \(timeoutSeconds) s")
            case .failed: throw HTTPClientError("TLS receive failed: \(session.failureReason)")
            }
        }
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 {
                throw HTTPClientError(
                    errno == EAGAIN ? "timed out after \(timeoutSeconds) s" : "receive failed: errno \(errno)")
            }
            if n > 0 { receivedResponseBytes = true }
            return Array(chunk[0..<n])
        }
    }

    private func fill() throws {
        let more = try receive()
        guard !more.isEmpty else { throw HTTPClientError("connection closed by the server") }
        buffer += more
    }

    private func readHead() throws -> HTTPClientResponse {
        var end: Int?
        while end == nil {
            end = findHeadEnd()
            if end == nil {
                guard buffer.count < 1 << 20 else { throw HTTPClientError("response head too large") }
                try fill()
            }
        }
        let headBytes = buffer[0..<end!]
        buffer.removeFirst(end! + 4)
        let lines = String(decoding: headBytes, as: UTF8.self).split(
            separator: "\r\n", omittingEmptySubsequences: false)
        guard let statusLine = lines.first else { throw HTTPClientError("empty response") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw HTTPClientError("malformed status line")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            headers.append((name, String(value)))
        }
        return HTTPClientResponse(status: status, headers: headers, body: [])
    }

    private func findHeadEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4)
        where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func readResponse(method: String) throws -> HTTPClientResponse {
        var response = try readHead()
        if response.status == 100 { response = try readHead() }
        if method == "HEAD" || response.status == 204 || response.status == 304 { return response }
        if response.header("transfer-encoding")?.lowercased().contains("chunked") == true {
            response.body = try readChunkedBody()
        } else if let lengthText = response.header("content-length") {
            // The server's number: a negative or absurd length is an error, not a slice that traps.
            guard let length = Int(lengthText), (0...Self.maxBodyBytes).contains(length) else {
                throw HTTPClientError("bad Content-Length '\(lengthText.prefix(32))'")
            }
            while buffer.count < length { try fill() }
            response.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else {
            while true {
                let more = try receive()
                if more.isEmpty { break }
                buffer += more
            }
            response.body = buffer
            close()
        }
        if response.header("connection")?.lowercased() == "close" { close() }
        return response
    }

    private func readChunkedBody() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            var lineEnd: Int?
            while lineEnd == nil {
                lineEnd = buffer.indices.dropLast().first { buffer[$0] == 13 && buffer[$0 + 1] == 10 }
                if lineEnd == nil { try fill() }
            }
            let sizeText = String(decoding: buffer[0..<lineEnd!], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingSpaces, radix: 16), (0...Self.maxBodyBytes).contains(size) else {
                throw HTTPClientError("bad chunk size")
            }
            buffer.removeFirst(lineEnd! + 2)
            if size == 0 {
                while !(buffer.count >= 2 && buffer[0] == 13 && buffer[1] == 10) { try fill() }
                buffer.removeFirst(2)
                return body
            }
            while buffer.count < size + 2 { try fill() }
            body += buffer[0..<size]
            buffer.removeFirst(size + 2)
        }
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String { String(self.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }
}
