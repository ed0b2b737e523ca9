// SlowConsumerTests -- a subscriber that stops reading is disconnected at its output limit; the others get
// everything, in order.

import CanopyCore
import CanopyNet
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct SlowConsumerTests {
    /// A raw WebSocket peer that listens on `path` as admin, reads until its listen is answered, then never reads.
    final class StalledSubscriber {
        let fd: Int32

        init(port: Int, namespace: String, admin: String, path: String) throws {
            fd = try Socket.connect(host: "127.0.0.1", port: port)
            var upgrade = Array(
                ("GET /.ws?v=5&ns=\(namespace) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                    + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    + "Sec-WebSocket-Version: 13\r\n\r\n").utf8)
            let auth = #"{"t":"d","d":{"r":1,"a":"gauth","b":{"cred":"\#(admin)"}}}"#
            let listen = #"{"t":"d","d":{"r":2,"a":"q","b":{"p":"\#(path)","h":""}}}"#
            for text in [auth, listen] {
                WebSocketFrameEncoder.encode(.text, payload: Array(text.utf8), maskingKey: [1, 2, 3, 4], into: &upgrade)
            }
            try sendAll(upgrade)
        }

        deinit { close(fd) }

        private func sendAll(_ bytes: [UInt8]) throws {
            var offset = 0
            let deadline = Date().addingTimeInterval(5)
            while offset < bytes.count {
                guard Date() < deadline else { throw HTTPClientError("stalled subscriber could not send") }
                let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent > 0 { offset += sent } else { Thread.sleep(forTimeInterval: 0.005) }
            }
        }

        /// Reads until the reply to the listen (request 2) has arrived: the listen has then joined its group. The
        /// server's frames are unmasked, so the reply's JSON text appears as is in the byte stream.
        func waitForListen(timeout: TimeInterval) -> Bool {
            let reply = Array(#"{"t":"d","d":{"r":2,"b":{"s":"ok""#.utf8)
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, 100) > 0 else { continue }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                guard n > 0 else { return false }
                received += buffer[0..<n]
                if received.indices.contains(where: { received[$0...].starts(with: reply) }) { return true }
            }
            return false
        }

        /// Reads whatever the kernel holds until the server's close arrives (EOF or reset); false on timeout.
        func drainUntilClosed(timeout: TimeInterval) -> Bool {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n == 0 { return true }
                if n < 0 {
                    let code = errno
                    if code == ECONNRESET { return true }
                    Thread.sleep(forTimeInterval: 0.01)
                }
            }
            return false
        }
    }

    @Test func aSubscriberThatStopsReadingIsDroppedAndTheOthersGetEverything() throws {
        try withServer(configure: { $0.maxOutputBacklogBytes = 1 << 20 }) { server in
            let (writer, reader) = try WireProtocolTests().connectAdmins(server, "slow")
            #expect(reader.reply(reader.request("q", ["p": "/big", "h": ""]))?["d"]?["b"]?["s"] == "ok")
            let stalled = try StalledSubscriber(port: server.port, namespace: "slow", admin: server.admin, path: "/big")
            // The stalled listen has joined before the flood (its own initial value is tiny); from here it never reads.
            #expect(stalled.waitForListen(timeout: 10))
            // 40 writes of 256 KiB: 10 MiB, far past 1 MiB plus what the kernel buffers for the stalled socket.
            let chunk = String(repeating: "x", count: 256 * 1024)
            var last: Int64 = 0
            for i in 0..<40 { last = writer.request("p", ["p": .string("/big/v\(i)"), "d": .string(chunk)]) }
            #expect(writer.reply(last)?["d"]?["b"]?["s"] == "ok")
            #expect(stalled.drainUntilClosed(timeout: 20))
            // The reading subscriber got every write, in order.
            var seen: [String] = []
            while seen.count < 40, let push = reader.push("d", timeout: 10) {
                if let path = push["d"]?["b"]?["p"]?.stringValue, path.hasPrefix("/big/v") { seen.append(path) }
            }
            #expect(seen == (0..<40).map { "/big/v\($0)" })
        }
    }
}
