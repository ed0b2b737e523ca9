// ConnectionHarness -- an HTTPServer in memory: bytes in, bytes out, time advanced by hand (after NIO's
// EmbeddedChannel).
//
// The server runs on a loop that the test drives on its own thread (`EventLoop.runPass`), reading a ManualClock.
// Each peer is one end of a Unix socket pair whose other end the server adopts, so the connection code under
// test is exactly the production code (reads, writes, shutdowns, epoll interest), without a network, a second
// thread, or any real time passing: a timeout fires when, and only when, the test advances the clock past it.
import CanopyNet
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP server, a hand-driven loop and a manual clock. Not thread-safe: use it from the test's thread only.
final class ConnectionHarness {
    let clock = ManualClock()
    let loop: EventLoop
    let server: HTTPServer

    init(
        limits: HTTPServerLimits = HTTPServerLimits(),
        refusal: @escaping (HTTPRequest) -> HTTPResponse? = { _ in nil },
        handler: @escaping (HTTPRequest, HTTPResponder) -> Void
    ) throws {
        loop = try EventLoop(clock: clock)
        server = HTTPServer(loop: loop, limits: limits, handler: ClosureHandler(refusal: refusal, handler))
    }

    /// Opens a connection to the server; `sendBufferBytes` shrinks the server side's send buffer (for tests of
    /// a peer that stops reading).
    func connect(sendBufferBytes: Int32? = nil) throws -> Peer {
        var fds: [Int32] = [0, 0]
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, kind, 0, &fds) == 0 else {
            throw TestClientError(description: "socketpair failed: errno \(errno)")
        }
        if var size = sendBufferBytes {
            setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        try server.adopt(fd: fds[1], remoteAddress: "harness:\(fds[0])")
        let peer = Peer(fd: fds[0], harness: self)
        run()
        return peer
    }

    /// Runs loop passes until nothing is left to do now: no queued tasks, due timers or readiness.
    func run() {
        for _ in 0..<10_000 {
            let dispatched = loop.runPass()
            if dispatched == 0 && !loop.hasImmediateWork { return }
        }
        Issue.record("the loop never went quiet")
    }

    /// Moves time forward and runs what became due.
    func advance(byMilliseconds milliseconds: Int64) {
        clock.advance(byMilliseconds: milliseconds)
        run()
    }

    /// The client's end of one connection.
    final class Peer {
        let fd: Int32
        private unowned let harness: ConnectionHarness
        private var buffer: [UInt8] = []
        /// The server closed its side (end of file or reset was read).
        private(set) var isClosedByServer = false

        init(fd: Int32, harness: ConnectionHarness) {
            self.fd = fd
            self.harness = harness
        }

        deinit { Glibc.close(fd) }

        /// Writes `text` and lets the server handle it.
        func send(_ text: String) { send(Array(text.utf8)) }

        /// Writes `bytes` (running the loop whenever the socket is full) and lets the server handle them.
        func send(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count {
                let count = bytes[offset...].withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if count > 0 {
                    offset += count
                } else if errno == EAGAIN {
                    harness.run()
                } else {
                    Issue.record("send failed: errno \(errno)")
                    return
                }
            }
            harness.run()
        }

        /// Ends the client's side of the connection and lets the server notice.
        func shutdownWrite() {
            _ = Glibc.shutdown(fd, Int32(SHUT_WR))
            harness.run()
        }

        /// Everything the server has written so far (taken from the buffer).
        func received() -> [UInt8] {
            pull()
            defer { buffer = [] }
            return buffer
        }

        /// Everything the server has written so far, as text.
        func receivedText() -> String { String(decoding: received(), as: UTF8.self) }

        /// The next complete response the server wrote, or nil if none is complete yet.
        func response() throws -> TestResponse? {
            pull()
            let head = Array("\r\n\r\n".utf8)
            guard let end = buffer.indices.first(where: { buffer[$0...].starts(with: head) }) else { return nil }
            let text = String(decoding: buffer[..<end], as: UTF8.self)
            var lines = text.components(separatedBy: "\r\n")
            let status = Int(lines.removeFirst().split(separator: " ")[1]) ?? 0
            let headers = lines.map { line -> (String, String) in
                let parts = line.split(separator: ":", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
            }
            var response = TestResponse(status: status, headers: headers, body: [])
            let length = response.header("Content-Length").flatMap(Int.init) ?? 0
            guard buffer.count >= end + 4 + length else { return nil }
            response.body = Array(buffer[(end + 4)..<(end + 4 + length)])
            buffer.removeFirst(end + 4 + length)
            return response
        }

        /// Reads whatever the kernel holds for this end, noting the server's close.
        private func pull() {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count > 0 {
                    buffer.append(contentsOf: chunk[0..<count])
                    continue
                }
                if count == 0 || errno == ECONNRESET { isClosedByServer = true }
                return
            }
        }

        /// Whether the server has closed its side, after reading what it wrote (kept for `received()`).
        var isClosed: Bool {
            pull()
            return isClosedByServer
        }
    }
}
