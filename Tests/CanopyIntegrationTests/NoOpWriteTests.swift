// NoOpWriteTests -- a write that stores nothing costs nothing after its reply and sends no event.
//
// Before, such a write (the same value again, a DELETE of an absent path) was skipped by the flush but stayed
// queued with its whole tree until the next real write in the namespace, which then replayed every queued
// operation to the listeners: memory grew with each no-op write, and one real write became thousands of events.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization
import Testing

@testable import CanopyServer

@Suite struct NoOpWriteTests {
    private static let rounds = 60

    /// The operations queued in `name`'s open batch, read on the daemon's loop.
    private func openOperations(_ server: InProcessServer, _ name: String) throws -> Int {
        let count = Mutex<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        server.daemon.withNamespace(name) { namespace in
            count.withLock { $0 = namespace.openOperationCount }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        return try #require(count.withLock { $0 })
    }

    @Test func noOpWritesQueueNothingAndTheNextRealWriteIsOneEvent() throws {
        try withServer { server in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let big = "\"" + String(repeating: "x", count: 10_000) + "\""
            #expect(try c.json("PUT", "/room/text.json?ns=noop", big, headers: admin).status == 200)
            // 40 children: more than a region compared row by row, so an unchanged rewrite must be caught whole.
            let seats = "{" + (0..<40).map { "\"s\($0)\":\($0)" }.joined(separator: ",") + "}"
            #expect(try c.json("PUT", "/room/seats.json?ns=noop", seats, headers: admin).status == 200)

            let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5)
            let head = try stream.openStream("/room.json?ns=noop", headers: admin + [("Accept", "text/event-stream")])
            #expect(head.status == 200)
            #expect(readEvents(stream, until: "\n\n").hasPrefix("event: put"))
            let wire = WireProtocolTests()
            let socket = try wire.connect(server, "noop")
            try wire.authAsAdmin(socket, server)
            let q = socket.request("q", ["p": "/room", "h": ""])
            #expect(socket.reply(q)?["d"]?["b"]?["s"] == "ok")
            #expect(socket.push("d", path: "/room") != nil)

            for round in 0..<Self.rounds {
                let (method, path, body): (String, String, String?) =
                    switch round % 5 {
                    case 0: ("PUT", "/room/text", big)
                    case 1: ("DELETE", "/room/absent", nil)
                    case 2: ("PATCH", "/room", #"{"text":\#(big),"gone":null}"#)
                    case 3: ("PUT", "/room/seats", seats)
                    default: ("PUT", "/room/seats/s1", "1.0")
                    }
                let answer = try c.json(method, "\(path).json?ns=noop", body, headers: admin)
                #expect(answer.status == 200, "\(method) \(path)")
                let p = socket.request("p", ["p": "/room/text", "d": .string(String(repeating: "x", count: 10_000))])
                #expect(socket.reply(p)?["d"]?["b"]?["s"] == "ok")
            }
            // Nothing is held after the replies: no operation waits in the open batch.
            #expect(try openOperations(server, "noop") == 0)

            // One real write: exactly one event on each transport, with its value.
            #expect(try c.json("PUT", "/room/open.json?ns=noop", "true", headers: admin).status == 200)
            let events = readEvents(stream, until: "\"data\":true")
            let expected = "event: put\ndata: {\"path\":\"/open\",\"data\":true}\n\n"
            #expect(events.utf8.count == expected.utf8.count)  // counted: a replay would print megabytes
            #expect(events.utf8.count > 1000 || events == expected)
            let change = try #require(socket.push("d", path: "/room/open"))
            #expect(change["d"]?["b"]?["d"] == true)
            let otherPushes = socket.all.filter { $0["d"]?["a"] == "d" || $0["d"]?["a"] == "m" }.count
            #expect(otherPushes == 0)
        }
    }
}
