// DrainTests -- SIGTERM drains the real `canopy serve`: it stops accepting, turns /.canopy/ready to 503, finishes
// the writes in flight, tells WebSocket clients to reconnect, and exits 0 within --drain-timeout.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// One blocking TCP connection to 127.0.0.1 for sending a request piece by piece (an upload in flight).
final class RawConnection {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPClientError("socket failed") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
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
            throw HTTPClientError("connect failed: errno \(errno)")
        }
    }

    deinit { Glibc.close(fd) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw HTTPClientError("send failed: errno \(errno)") }
            offset += count
        }
    }

    /// Everything the server sends until it closes the connection (or the 10 s receive timeout).
    func readToEnd() -> String {
        var all: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            all += chunk[0..<count]
        }
        return String(decoding: all, as: UTF8.self)
    }
}

@Suite struct DrainTests {
    /// An upload in flight when SIGTERM arrives is finished and its write acknowledged, durably; meanwhile
    /// readiness says 503 and new connections are refused; then the process exits 0.
    @Test(.timeLimit(.minutes(1))) func sigtermFinishesAnInFlightWriteAndTurnsReadinessOff() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try ServerProcess(dataDirectory: data, extraArguments: ["--metrics-port", "0"])
        defer { if server.process.isRunning { server.kill9() } }
        let metrics = HTTPClient(host: "127.0.0.1", port: server.metricsPort)
        #expect(try metrics.request("GET", "/.canopy/ready").status == 200)
        #expect(try metrics.request("GET", "/.canopy/health").status == 200)

        let body = #"{"state": "written during the drain"}"#
        let upload = try RawConnection(port: server.port)
        try upload.send(
            "PUT /drain/a.json HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(server.admin)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
                + String(body.prefix(10)))
        // The daemon has read the headers when another request on a new connection is answered after them.
        #expect(try HTTPClient(host: "127.0.0.1", port: server.port).request("GET", "/.canopy/health").status == 200)

        server.sendTerminate()
        var status = 0
        let deadline = Date().addingTimeInterval(10)
        while status != 503 && Date() < deadline {
            status = (try? metrics.request("GET", "/.canopy/ready").status) ?? 0
            if status != 503 { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(status == 503)
        #expect(try metrics.request("GET", "/.canopy/ready").text == "not ready: draining\n")
        let draining = try metrics.request("GET", "/.canopy/metrics").text
        #expect(metricSample(draining, "canopy_draining") == 1)
        // The listening socket is closed: a new connection is refused.
        #expect(throws: (any Error).self) { try HTTPClient(host: "127.0.0.1", port: server.port).request("GET", "/") }

        try upload.send(String(body.dropFirst(10)))
        let answer = upload.readToEnd()
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "answer: \(answer)")
        #expect(answer.contains("written during the drain"))
        #expect(server.waitForExit(timeout: 15) == 0)

        // Acknowledged means durable: a new daemon on the same directory has it.
        let again = try ServerProcess(dataDirectory: data)
        defer { again.terminate() }
        let read = try HTTPClient(host: "127.0.0.1", port: again.port).json(
            "GET", "/drain/a/state.json", headers: [("Authorization", "Bearer \(again.admin)")])
        #expect(read.json == "written during the drain")
    }

    /// What is still open at --drain-timeout is closed then, and the process still exits 0.
    @Test(.timeLimit(.minutes(1))) func aDrainEndsAtItsTimeout() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try ServerProcess(dataDirectory: data, extraArguments: ["--drain-timeout", "1"])
        defer { if server.process.isRunning { server.kill9() } }
        let upload = try RawConnection(port: server.port)
        try upload.send("PUT /never.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
        #expect(try HTTPClient(host: "127.0.0.1", port: server.port).request("GET", "/.canopy/health").status == 200)
        let started = Date()
        server.sendTerminate()
        #expect(server.waitForExit(timeout: 15) == 0)
        let elapsed = Date().timeIntervalSince(started)
        // Held open by the unfinished upload until the deadline, not beyond it (generous bounds: a loaded machine).
        #expect(elapsed >= 0.9, "exited after \(elapsed) s")
        #expect(elapsed < 10, "exited after \(elapsed) s")
        #expect(!upload.readToEnd().contains("200 OK"))
    }

    /// A WebSocket client of the real binary is told to reconnect: a reset naming the host it connected to (the
    /// Firebase SDKs reconnect on it), then a close frame 1001 (going away); the process exits 0.
    @Test(.timeLimit(.minutes(1))) func sigtermTellsWebSocketClientsToReconnect() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try ServerProcess(dataDirectory: data)
        defer { if server.process.isRunning { server.kill9() } }
        let client = try WireTestClient(port: server.port, namespace: "drainws")
        let auth = client.request("gauth", ["cred": .string(server.admin)])
        #expect(client.reply(auth)?["d"]?["b"]?["s"] == "ok")
        let write = client.request("p", ["p": "/x/y", "d": "last write"])
        #expect(client.reply(write)?["d"]?["b"]?["s"] == "ok")
        server.sendTerminate()
        let reset = client.waitFor(timeout: 10) { $0["t"] == "c" && $0["d"]?["t"] == "r" }
        #expect(reset?["d"]?["d"] == .string("127.0.0.1:\(server.port)"))
        #expect(client.waitUntilClosed(timeout: 10))
        #expect(client.serverCloseCode == 1001)
        #expect(server.waitForExit(timeout: 15) == 0)
    }

    /// A write in flight on a WebSocket when the drain begins (committed, its WAL sync held) is acknowledged
    /// before the reset, and the reset waits for it: acknowledged means durable, and nothing is lost.
    @Test(.timeLimit(.minutes(1))) func aWebSocketWriteInFlightIsAcknowledgedBeforeTheReset() throws {
        let holding = Mutex<Bool>(false)
        let gate = DispatchSemaphore(value: 0)
        let server = try InProcessServer { configuration in
            configuration.beforeWALSync = { if holding.withLock({ $0 }) { gate.wait() } }
        }
        let client = try WireTestClient(port: server.port, namespace: "drainws2")
        try WireProtocolTests().authAsAdmin(client, server)
        let listen = client.request("q", ["p": "/x", "h": ""])
        #expect(client.reply(listen)?["d"]?["b"]?["s"] == "ok")
        holding.withLock { $0 = true }
        let write = client.request("p", ["p": "/x/y", "d": "in flight"])
        // Listeners hear a write once it is in the WAL, before it is durable: it is in flight now.
        #expect(client.push("d", path: "/x/y") != nil)
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            server.stop(removeData: false)
            stopped.signal()
        }
        // While the sync is held, neither the acknowledgement nor the reset is sent, and the socket stays open.
        #expect(client.waitFor(timeout: 0.3) { $0["d"]?["t"] == "r" || $0["d"]?["r"] == .int(write) } == nil)
        #expect(!client.isClosed)
        holding.withLock { $0 = false }
        gate.signal()
        #expect(client.waitUntilClosed(timeout: 10))
        #expect(client.serverCloseCode == 1001)
        // In this order: the acknowledgement, then the reset.
        let messages = client.all
        let ack = messages.firstIndex { $0["d"]?["r"] == .int(write) }
        let reset = messages.firstIndex { $0["t"] == "c" && $0["d"]?["t"] == "r" }
        #expect(ack.map { messages[$0]["d"]?["b"]?["s"] } == "ok")
        #expect(ack != nil && reset != nil && ack! < reset!, "received: \(messages)")
        #expect(stopped.wait(timeout: .now() + 20) == .success)
        defer { try? FileManager.default.removeItem(atPath: server.dataDirectory) }
        // Durable: a new daemon on the directory reads it.
        let again = try InProcessServer { $0.dataDirectory = server.dataDirectory }
        defer { again.stop(removeData: false) }
        let read = try again.client().json(
            "GET", "/x/y.json?ns=drainws2", headers: [("Authorization", "Bearer \(again.admin)")])
        #expect(read.json == "in flight")
    }
}
