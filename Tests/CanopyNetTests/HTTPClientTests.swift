// HTTPClientTests -- numbers a server or a URL hands the client (Content-Length, chunk sizes, ports) are checked,
// never sliced or converted unchecked (each trapped before).

import CanopyNet
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A one-shot server on 127.0.0.1:0: accepts one connection, reads the request head, answers `response`, closes.
final class CannedResponseServer: Sendable {
    let port: Int
    private let listener: Int32
    private let done = DispatchSemaphore(value: 0)

    init(_ response: String) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && Glibc.listen(listener, 1) == 0
                    && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound else { throw TestClientError(description: "cannot listen on 127.0.0.1") }
        port = Int(UInt16(bigEndian: address.sin_port))
        let finished = done
        Thread {
            let connection = accept(listener, nil, nil)
            var head: [UInt8] = []
            var byte: UInt8 = 0
            while connection >= 0, !head.ends(with: Array("\r\n\r\n".utf8)), recv(connection, &byte, 1, 0) == 1 {
                head.append(byte)
            }
            let bytes = Array(response.utf8)
            _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            Glibc.close(connection)
            finished.signal()
        }.start()
    }

    /// Waits for the connection to be answered, then closes the listener.
    func stop() {
        _ = done.wait(timeout: .now() + 10)
        Glibc.close(listener)
    }
}

extension Array where Element: Equatable {
    fileprivate func ends(with suffix: [Element]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}

@Suite(.timeLimit(.minutes(1))) struct HTTPClientTests {
    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\nhello\r\n0\r\n\r\n",
    ])
    func hostileLengthsAreErrors(response: String) throws {
        let server = try CannedResponseServer(response)
        defer { server.stop() }
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5)
        #expect(throws: HTTPClientError.self) { try client.request("GET", "/") }
    }

    @Test func wellFormedLengthsStillWork() throws {
        let server = try CannedResponseServer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        defer { server.stop() }
        let response = try HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5).request("GET", "/")
        #expect(response.status == 200 && response.text == "hello")
    }

    /// A cluster node advertised by name (`s-node1.localhost`, Cluster.md) is reached by the proxy: localhost
    /// names are the loopback address without the resolver (which here knows only `localhost` itself).
    @Test(arguments: ["s-node1.localhost", "S-Node2.LocalHost", "localhost", "127.0.0.1"])
    func namesAreResolved(host: String) throws {
        let server = try CannedResponseServer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        defer { server.stop() }
        let response = try HTTPClient(host: host, port: server.port, timeoutSeconds: 5).request("GET", "/")
        #expect(response.status == 200 && response.text == "ok")
    }

    @Test func aNameWithoutAnAddressIsAnErrorNamingIt() {
        #expect(throws: HTTPClientError.self) {
            try HTTPClient(host: "no-such-host.invalid", port: 80, timeoutSeconds: 5).request("GET", "/")
        }
    }

    @Test(arguments: ["http://127.0.0.1:99999", "http://127.0.0.1:-1", "http://127.0.0.1:0", "http://h:65536/x"])
    func portsOutsideTheRangeAreRefused(url: String) {
        #expect(throws: HTTPClientError.self) { try HTTPClient(url: url) }
    }

    @Test(arguments: [-1, 65536, Int.max])
    func aDirectlyGivenPortOutsideTheRangeFailsTheRequest(port: Int) {
        #expect(throws: HTTPClientError.self) { try HTTPClient(host: "127.0.0.1", port: port).request("GET", "/") }
    }
}
