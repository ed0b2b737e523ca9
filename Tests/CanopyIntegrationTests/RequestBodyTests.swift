// RequestBodyTests -- bodies against the real daemon: refused from the head when no rule could allow the write,
// parsed off the loop when large, and held under one budget for all connections (503 beyond it); subscribers that
// stop reading held under one output budget.

import CanopyCore
import CanopyNet
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timeLimit(.minutes(2))) struct RequestBodyTests {
    /// A raw connection: sends bytes as given and reads what the server answered so far.
    final class Raw {
        let fd: Int32
        private var buffer: [UInt8] = []

        init(port: Int) throws { fd = try Socket.connect(host: "127.0.0.1", port: port) }
        deinit { close(fd) }

        func send(_ text: String) throws { try send(Array(text.utf8)) }

        func send(_ bytes: [UInt8]) throws {
            var offset = 0
            let deadline = Date().addingTimeInterval(20)
            while offset < bytes.count {
                guard Date() < deadline else { throw HTTPClientError("could not send") }
                let sent = bytes[offset...].withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if sent > 0 { offset += sent } else if errno == EAGAIN { Thread.sleep(forTimeInterval: 0.002) } else {
                    throw HTTPClientError("send failed: errno \(errno)")
                }
            }
        }

        /// The next complete response (head and `Content-Length` body) within `timeout`, or nil.
        func response(timeout: TimeInterval = 10) -> (status: Int, head: String, body: String)? {
            let deadline = Date().addingTimeInterval(timeout)
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                if let end = buffer.indices.first(where: { buffer[$0...].starts(with: Array("\r\n\r\n".utf8)) }) {
                    let head = String(decoding: buffer[..<end], as: UTF8.self)
                    let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                        .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                    if buffer.count >= end + 4 + length {
                        let body = String(decoding: buffer[(end + 4)..<(end + 4 + length)], as: UTF8.self)
                        buffer.removeFirst(end + 4 + length)
                        let status = Int(head.split(separator: " ")[1]) ?? 0
                        return (status, head, body)
                    }
                }
                let left = Int32(deadline.timeIntervalSinceNow * 1000)
                guard left > 0 else { return nil }
                var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&descriptor, 1, left) > 0 else { return nil }
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return nil }
                buffer += chunk[0..<n]
            }
        }
    }

    private func setRules(_ server: InProcessServer, _ rules: String) throws {
        let r = try server.client().json(
            "PUT", "/.settings/rules.json", rules, headers: [("Authorization", "Bearer \(server.admin)")])
        #expect(r.status == 200)
    }

    @Test func aWriteNoRuleAllowsIsRefusedBeforeItsBodyIsSent() throws {
        try withServer { server in  // no rules: only the admin may write
            let raw = try Raw(port: server.port)
            try raw.send("PUT /big.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200000000\r\n\r\n")
            let refused = try #require(raw.response(), "answered without any of the 200 MB body")
            #expect(refused.status == 401)
            #expect(refused.body == #"{"error":"Permission denied"}"#)
            // The same refusal for a push and a large update, and for the rules endpoint.
            for (method, path) in [("POST", "/list.json"), ("PATCH", "/.json"), ("PUT", "/.settings/rules.json")] {
                let other = try Raw(port: server.port)
                try other.send("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 50000000\r\n\r\n")
                #expect(other.response()?.status == 401, "\(method) \(path)")
            }
        }
    }

    @Test func aRefusedBodyIsDroppedAndTheConnectionServesTheNextRequest() throws {
        try withServer { server in
            let raw = try Raw(port: server.port)
            try raw.send("PUT /a.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 400000\r\n\r\n")
            #expect(raw.response()?.status == 401)
            try raw.send("\"" + String(repeating: "x", count: 399_998) + "\"")
            try raw.send("GET /.json?auth=\(server.admin) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let next = try #require(raw.response())
            #expect(next.status == 200 && next.body == "null")  // nothing was written
        }
    }

    @Test func onlyCertainRefusalsAreDecidedFromTheHead() throws {
        try withServer { server in
            try setRules(
                server,
                #"{"rules": {"users": {"$uid": {".write": "auth != null && auth.uid === $uid"}},"#
                    + #" "open": {"$key": {".write": "!data.exists()"}}}}"#)
            let token = try server.daemon.credentials.mint(
                claims: ["uid": "u1"], ttlSeconds: 3600, now: SystemClock().nowMilliseconds())
            let body = "\"hello\""
            func head(_ path: String) -> String {
                "PUT \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
            }
            // Anonymous, or someone else: no rule can allow it.
            let anonymous = try Raw(port: server.port)
            try anonymous.send(head("/users/u1.json"))
            #expect(anonymous.response()?.status == 401)
            let other = try Raw(port: server.port)
            try other.send(head("/users/u2.json?auth=\(token)"))
            #expect(other.response()?.status == 401)
            // The owner: the body is read and the write decided as usual.
            let owner = try Raw(port: server.port)
            try owner.send(head("/users/u1.json?auth=\(token)"))
            #expect(owner.response(timeout: 0.3) == nil)  // waiting for the body
            try owner.send(body)
            #expect(owner.response()?.status == 200)
            // A rule that reads the data is never decided early, even for anonymous writers.
            let open = try Raw(port: server.port)
            try open.send(head("/open/k.json"))
            #expect(open.response(timeout: 0.3) == nil)
            try open.send(body)
            #expect(open.response()?.status == 200)
            let again = try Raw(port: server.port)
            try again.send(head("/open/k.json"))
            try again.send(body)
            #expect(again.response()?.status == 401)  // now it exists: denied by the full decision
        }
    }

    @Test func expectContinueIsAnsweredWithTheRefusalOrWithContinue() throws {
        try withServer { server in
            let refused = try Raw(port: server.port)
            try refused.send(
                "PUT /a.json HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            let answer = try #require(refused.response())
            #expect(answer.status == 401)
            #expect(answer.head.lowercased().contains("connection: close"))
            let allowed = try Raw(port: server.port)
            try allowed.send(
                "PUT /a.json?auth=\(server.admin) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
                    + "Expect: 100-continue\r\n\r\n")
            #expect(allowed.response()?.status == 100)
            try allowed.send("12345")
            #expect(allowed.response()?.body == "12345")
        }
    }

    @Test func aLargeBodyIsParsedOffTheLoopWhileOtherClientsAreServed() throws {
        let gate = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        try withServer(configure: {
            $0.beforeLargeBodyParse = {
                entered.signal()
                gate.wait()
            }
        }) { server in
            let value = "\"" + String(repeating: "v", count: 512 * 1024) + "\""
            let writer = try Raw(port: server.port)
            try writer.send(
                "PUT /big.json?auth=\(server.admin)&print=silent HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "Content-Length: \(value.utf8.count)\r\n\r\n" + value)
            #expect(entered.wait(timeout: .now() + 10) == .success)
            // The parse is held on the compute thread; the loop still answers another client.
            let reader = try Raw(port: server.port)
            try reader.send("GET /small.json?auth=\(server.admin) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(reader.response()?.status == 200)
            gate.signal()
            #expect(writer.response()?.status == 204)
            let read = try server.client().request("GET", "/big.json?auth=\(server.admin)")
            #expect(read.body.count == value.utf8.count)
        }
    }

    @Test func bodiesPastTheBodyMemoryAreRefused503UntilTheOthersAreDone() throws {
        try withServer(configure: { $0.maxBodyMemoryBytes = 1 << 20 }) { server in
            let value = "\"" + String(repeating: "a", count: 800 * 1024 - 2) + "\""
            let head =
                "PUT /a.json?auth=\(server.admin)&print=silent HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Content-Length: \(value.utf8.count)\r\n\r\n"
            let first = try Raw(port: server.port)
            try first.send(head + value.prefix(1000))
            Thread.sleep(forTimeInterval: 0.1)
            let second = try Raw(port: server.port)
            try second.send(head)
            let refused = try #require(second.response(), "answered before its body")
            #expect(refused.status == 503)
            #expect(refused.head.contains("Retry-After: 1"))
            #expect(refused.body.hasPrefix(#"{"error":"#))
            try first.send(String(value.dropFirst(1000)))
            #expect(first.response()?.status == 204)
            let third = try Raw(port: server.port)
            try third.send(head + value)
            #expect(third.response()?.status == 204)
        }
    }

    @Test func stalledSubscribersAreDroppedPastTheOutputBudgetWhileWritersGoOn() throws {
        // Each alone stays far below its own limit (64 MiB); together they pass the 2 MiB budget. (Which one goes
        // first is checked deterministically in HTTPServerBudgetTests; a reading subscriber is left out here: on a
        // loaded machine its transient backlog can be as large as a stalled one's.)
        try withServer(configure: {
            $0.maxOutputBacklogBytes = 64 << 20
            $0.maxOutputMemoryBytes = 2 << 20
        }) { server in
            let (writer, _) = try WireProtocolTests().connectAdmins(server, "budget")
            var stalled: [SlowConsumerTests.StalledSubscriber] = []
            for _ in 0..<3 {
                let subscriber = try SlowConsumerTests.StalledSubscriber(
                    port: server.port, namespace: "budget", admin: server.admin, path: "/big")
                #expect(subscriber.waitForListen(timeout: 10))
                stalled.append(subscriber)
            }
            let chunk = String(repeating: "x", count: 256 * 1024)
            var last: Int64 = 0
            for i in 0..<40 { last = writer.request("p", ["p": .string("/big/v\(i)"), "d": .string(chunk)]) }
            #expect(writer.waitFor(timeout: 30) { $0["d"]?["r"] == .int(last) }?["d"]?["b"]?["s"] == "ok")
            // Only now do they read (draining makes them readers again): each finds its connection closed.
            for subscriber in stalled { #expect(subscriber.drainUntilClosed(timeout: 30)) }
        }
    }
}
