// TestClient -- a tiny blocking HTTP client over Glibc sockets, for live tests against 127.0.0.1.
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A parsed response as the test client saw it.
struct TestResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
    var bodyText: String { String(decoding: body, as: UTF8.self) }
}

struct TestClientError: Error, CustomStringConvertible {
    var description: String
}

/// One blocking TCP connection with a receive timeout (so a failing test cannot hang).
final class TestClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int, timeoutSeconds: Int = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestClientError(description: "socket failed") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else {
            Glibc.close(fd)
            throw TestClientError(description: "connect failed: errno \(errno)")
        }
    }

    deinit { Glibc.close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw TestClientError(description: "send failed: errno \(errno)") }
            offset += count
        }
    }

    func shutdownWrite() { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Reads more bytes into the buffer; false on EOF. Throws on timeout or error.
    @discardableResult
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        if count == 0 { return false }
        if errno == ECONNRESET { return false }
        throw TestClientError(description: "recv failed or timed out: errno \(errno)")
    }

    /// Reads one response (an interim 100 counts as a response). Close-delimited bodies read to EOF.
    func readResponse() throws -> TestResponse {
        var headEnd: Int?
        while true {
            if let range = findHeadEnd() {
                headEnd = range
                break
            }
            guard try fill() else { throw TestClientError(description: "connection closed before a response") }
        }
        let end = headEnd!
        let head = String(decoding: buffer[0..<end], as: UTF8.self)
        buffer.removeFirst(end + 4)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw TestClientError(description: "bad status line")
        }
        let headers = lines.map { line -> (String, String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        var response = TestResponse(status: status, headers: headers, body: [])
        if status < 200 || status == 204 || status == 304 { return response }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            while buffer.count < length {
                guard try fill() else { throw TestClientError(description: "closed inside body") }
            }
            response.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else {
            while try fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// Reads until `count` body bytes beyond what is buffered are available, returning them (for streams).
    func readBytes(atLeast count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { break }
        }
        let taken = buffer
        buffer = []
        return taken
    }

    /// Reads exactly `count` bytes.
    func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else {
                throw TestClientError(description: "closed after \(buffer.count) of \(count) bytes")
            }
        }
        let taken = Array(buffer[0..<count])
        buffer.removeFirst(count)
        return taken
    }

    /// Reads one unmasked server WebSocket frame: (FIN+opcode byte, payload).
    func readFrame() throws -> (first: UInt8, payload: [UInt8]) {
        let header = try readExactly(2)
        var length = Int(header[1] & 0x7F)
        if length == 126 {
            length = try readExactly(2).reduce(0) { $0 << 8 | Int($1) }
        } else if length == 127 {
            length = try readExactly(8).reduce(0) { $0 << 8 | Int($1) }
        }
        return (header[0], try readExactly(length))
    }

    /// Reads until `marker` appears; returns everything up to and including it.
    func readUntil(_ marker: String) throws -> String {
        let needle = Array(marker.utf8)
        while true {
            if let index = firstIndex(of: needle) {
                let end = index + needle.count
                let text = String(decoding: buffer[0..<end], as: UTF8.self)
                buffer.removeFirst(end)
                return text
            }
            guard try fill() else { throw TestClientError(description: "closed before marker") }
        }
    }

    /// True when the server closes the connection (EOF or reset) before the timeout.
    func waitForClose() -> Bool {
        while true {
            do {
                if try !fill() { return true }
            } catch {
                return false
            }
        }
    }

    private func findHeadEnd() -> Int? {
        firstIndex(of: Array("\r\n\r\n".utf8))
    }

    private func firstIndex(of needle: [UInt8]) -> Int? {
        guard buffer.count >= needle.count, let first = needle.first else { return nil }
        return buffer.withUnsafeBufferPointer { bytes -> Int? in
            var start = 0
            while start <= bytes.count - needle.count {
                guard let candidate = bytes[start...(bytes.count - needle.count)].firstIndex(of: first) else {
                    return nil
                }
                if bytes[candidate..<(candidate + needle.count)].elementsEqual(needle) { return candidate }
                start = candidate + 1
            }
            return nil
        }
    }
}
