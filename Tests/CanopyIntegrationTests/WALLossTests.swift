// WALLossTests -- after `kill -9` of the real binary, a namespace whose WAL was damaged refuses service (503, naming
// what is missing) instead of serving fewer acknowledged writes without a word; the others keep serving.

import CanopyCore
import CanopyNet
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

@Suite struct WALLossTests {
    static let items = 2000

    /// Writes `items` acknowledged items to namespace `loss` (4 writers) and one to `other`, then kills the daemon.
    private func writeAndKill(_ data: String) throws {
        let server = try ServerProcess(dataDirectory: data)
        let admin = server.admin
        let failures = Atomic<Int>(0)
        let group = DispatchGroup()
        for w in 0..<4 {
            group.enter()
            Thread { [port = server.port] in
                defer { group.leave() }
                let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 20)
                for i in stride(from: w, to: Self.items, by: 4) {
                    let response = try? client.request(
                        "PUT", "/items/i\(i).json?ns=loss&print=silent", headers: [("Authorization", "Bearer \(admin)")],
                        body: Array(#"{"i":\#(i)}"#.utf8))
                    if response?.status != 204 { failures.add(1, ordering: .relaxed) }
                }
            }.start()
        }
        group.wait()
        let other = try HTTPClient(host: "127.0.0.1", port: server.port).request(
            "PUT", "/x.json?ns=other", headers: [("Authorization", "Bearer \(admin)")], body: Array("1".utf8))
        #expect(other.status == 200)
        #expect(failures.load(ordering: .relaxed) == 0)
        // The last commit may have been checkpointed whole (SQLite's auto-checkpoint at 1,000 pages): then the
        // WAL holds nothing a damage could lose. One small write outside `items` leaves frames to damage.
        for attempt in 0..<Self.tailWrites {
            if let (frames, backfilled) = WALDamage.frames(of: data + "/loss.sqlite"), frames > backfilled { break }
            let tail = try HTTPClient(host: "127.0.0.1", port: server.port).request(
                "PUT", "/tail.json?ns=loss", headers: [("Authorization", "Bearer \(admin)")], body: Array("\(attempt)".utf8))
            #expect(tail.status == 200)
        }
        server.kill9()
    }

    /// Writes after the items, at most, to leave frames in the WAL (each is one more commit and revision).
    static let tailWrites = 3

    private func count(_ server: ServerProcess, _ namespace: String) throws -> (status: Int, count: Int, body: String) {
        let response = try HTTPClient(host: "127.0.0.1", port: server.port).request(
            "GET", "/items.json?ns=\(namespace)", headers: [("Authorization", "Bearer \(server.admin)")])
        let json = try? JSONValue.parse(response.body)
        return (response.status, json?.members?.count ?? 0, response.text)
    }

    @Test(.timeLimit(.minutes(3)), arguments: WALDamage.allCases) func aDamagedWALIsRefusedUntilAccepted(
        damage: WALDamage
    ) throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        try writeAndKill(data)
        // The revision recorded outside the WAL: one per commit (concurrent writes share commits).
        let record = FileManager.default.contents(atPath: data + "/loss.sqlite-seq") ?? Data()
        let recorded = record.count == 24 ? record[8..<16].reversed().reduce(0) { ($0 << 8) | Int($1) } : -1
        #expect(recorded > 0 && recorded <= Self.items + Self.tailWrites)
        try damage.apply(to: data + "/loss.sqlite")

        let log = data + "/daemon.log"
        do {
            let restarted = try ServerProcess(dataDirectory: data, logFile: log)
            defer { restarted.terminate() }  // also when an expectation throws
            let refused = try count(restarted, "loss")
            #expect(refused.status == 503, "served \(refused.count) of \(Self.items) acknowledged items without a word")
            let message = try #require(try JSONValue.parse(Array(refused.body.utf8))["error"]?.stringValue)
            #expect(message.contains("Namespace 'loss'"))
            #expect(message.contains("expected revision \(recorded), found revision"))
            #expect(message.contains("--accept-data-loss loss"))
            // Still refused on the next request; the other namespace is served.
            #expect(try count(restarted, "loss").status == 503)
            let other = try HTTPClient(host: "127.0.0.1", port: restarted.port).request(
                "GET", "/x.json?ns=other", headers: [("Authorization", "Bearer \(restarted.admin)")])
            #expect(other.status == 200 && other.text == "1")
            // The wire protocol's handshake is refused the same way.
            let handshake = try HTTPClient(host: "127.0.0.1", port: restarted.port).request(
                "GET", "/.ws?v=5&ns=loss",
                headers: [
                    ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
                    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                ])
            #expect(handshake.status == 503)
            #expect(handshake.text.contains("--accept-data-loss loss"))
        }
        let logged = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(logged.contains("event=ns.data_loss") && logged.contains("ns=loss"))

        // The operator accepts the loss: what was recovered is served, and becomes the baseline.
        let accepted: (status: Int, count: Int, body: String)
        do {
            let accepting = try ServerProcess(dataDirectory: data, extraArguments: ["--accept-data-loss", "loss"])
            defer { accepting.terminate() }
            accepted = try count(accepting, "loss")
        }
        #expect(accepted.status == 200)
        #expect(accepted.count < Self.items)
        let later = try ServerProcess(dataDirectory: data)
        defer { later.terminate() }
        #expect(try count(later, "loss") == accepted)
    }

    /// No false alarm: a `kill -9` without damage, a clean restart, a restart after the WAL was checkpointed and
    /// removed, and an offline `canopy import` all serve every item.
    @Test(.timeLimit(.minutes(3))) func undamagedStoresAreServedWhole() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        try writeAndKill(data)
        let afterKill = try ServerProcess(dataDirectory: data)
        #expect(try count(afterKill, "loss").count == Self.items)
        afterKill.kill9()

        let again = try ServerProcess(dataDirectory: data)
        #expect(try count(again, "loss").count == Self.items)
        // `canopy export` while it runs, then an offline `canopy import` of that document after a clean stop.
        let document = data + "-export.json"
        defer { try? FileManager.default.removeItem(atPath: document) }
        #expect(
            try runCanopy([
                "export", "--ns", "loss", "--out", document, "--url", "http://127.0.0.1:\(again.port)", "--token",
                again.admin,
            ]).status == 0)
        again.terminate()  // closes cleanly: checkpointed, WAL truncated
        try? FileManager.default.removeItem(atPath: data + "/loss.sqlite-wal")
        let checkpointed = try ServerProcess(dataDirectory: data)
        #expect(try count(checkpointed, "loss").count == Self.items)
        checkpointed.terminate()
        #expect(try runCanopy(["import", "--ns", "loss", document, "--offline", "--data", data]).status == 0)
        let imported = try ServerProcess(dataDirectory: data)
        defer { imported.terminate() }
        let served = try count(imported, "loss")
        #expect(served.status == 200 && served.count == Self.items)
    }
}
