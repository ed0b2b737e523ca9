// DurabilityTests -- acknowledged writes survive `kill -9` of the real daemon binary; nothing is half-applied.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization
import Testing

@Suite struct DurabilityTests {
    /// Several writers hammer the real binary; it is killed with SIGKILL mid-stream. After a restart every
    /// acknowledged write is there, and every write that is there is whole (all of its leaves).
    @Test(.timeLimit(.minutes(2))) func acknowledgedWritesSurviveKill9() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try ServerProcess(dataDirectory: data)
        let admin = server.admin
        let acknowledged = Mutex<[String: Int]>([:])
        let stop = Atomic<Bool>(false)
        let writers = 8
        let group = DispatchGroup()
        for w in 0..<writers {
            group.enter()
            Thread { [port = server.port] in
                defer { group.leave() }
                let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 5)
                var i = 0
                while !stop.load(ordering: .relaxed) {
                    let key = "w\(w)-\(i)"
                    let body = #"{"i":\#(i),"w":\#(w),"pad":"\#(String(repeating: "x", count: 200))","nested":{"i":\#(i)}}"#
                    let target = i % 3 == 0 ? "/log.json?ns=crash" : "/log/\(key).json?ns=crash"
                    let payload = i % 3 == 0 ? #"{"\#(key)":\#(body)}"# : body
                    guard
                        let response = try? client.request(
                            i % 3 == 0 ? "PATCH" : "PUT", target, headers: [("Authorization", "Bearer \(admin)")],
                            body: Array(payload.utf8)),
                        response.status == 200
                    else { return }
                    acknowledged.withLock { $0[key] = i }
                    i += 1
                }
            }.start()
        }
        Thread.sleep(forTimeInterval: 1.5)
        server.kill9()
        stop.store(true, ordering: .relaxed)
        _ = group.wait(timeout: .now() + 10)
        let acked = acknowledged.withLock { $0 }
        #expect(acked.count > 50, "the writers should have been acknowledged many times before the kill")

        let restarted = try ServerProcess(dataDirectory: data)
        defer { restarted.terminate() }
        let client = HTTPClient(host: "127.0.0.1", port: restarted.port)
        let response = try client.request("GET", "/log.json?ns=crash", headers: [("Authorization", "Bearer \(admin)")])
        let log = try JSONValue.parse(response.body)
        for (key, i) in acked {
            let entry = try #require(log[key], "acknowledged write \(key) is missing after kill -9")
            #expect(entry["i"] == .int(Int64(i)))
        }
        for member in log.members ?? [] {
            let entry = member.value
            #expect(entry["i"] != nil && entry["w"] != nil && entry["pad"] != nil && entry["nested"]?["i"] == entry["i"],
                "write \(member.key) is half-applied")
        }
    }

    /// SIGTERM finishes in-flight writes and closes the database cleanly.
    @Test(.timeLimit(.minutes(1))) func gracefulShutdownKeepsWrites() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try ServerProcess(dataDirectory: data)
        let admin = server.admin
        let client = HTTPClient(host: "127.0.0.1", port: server.port)
        for i in 0..<20 {
            let r = try client.request(
                "PUT", "/g/\(i).json?ns=term", headers: [("Authorization", "Bearer \(admin)")], body: Array("\(i)".utf8))
            #expect(r.status == 200)
        }
        server.terminate()
        #expect(server.process.terminationStatus == 0)
        let restarted = try ServerProcess(dataDirectory: data)
        defer { restarted.terminate() }
        let r = try HTTPClient(host: "127.0.0.1", port: restarted.port).request(
            "GET", "/g.json?ns=term", headers: [("Authorization", "Bearer \(admin)")])
        let values = try JSONValue.parse(r.body)
        #expect(values.arrayValue?.count == 20)
    }
    /// Priorities of objects (stored as their own rows) come back after a restart, like leaf priorities.
    @Test(.timeLimit(.minutes(1))) func prioritiesSurviveARestart() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try ServerProcess(dataDirectory: data)
        let admin = server.admin
        let body = #"{"room":{".priority":5,"name":"Lobby","seat":{".value":3,".priority":"b"}}}"#
        let put = try HTTPClient(host: "127.0.0.1", port: server.port).request(
            "PUT", "/p.json?ns=prio", headers: [("Authorization", "Bearer \(admin)")], body: Array(body.utf8))
        #expect(put.status == 200)
        server.kill9()
        let restarted = try ServerProcess(dataDirectory: data)
        defer { restarted.terminate() }
        let r = try HTTPClient(host: "127.0.0.1", port: restarted.port).request(
            "GET", "/p.json?ns=prio&format=export", headers: [("Authorization", "Bearer \(admin)")])
        #expect(
            try JSONValue.parse(r.body)
                == JSONValue.parse(#"{"room":{".priority":5,"name":"Lobby","seat":{".value":3,".priority":"b"}}}"#))
    }
}
