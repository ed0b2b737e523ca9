// FullDiskTests -- a write the store cannot commit (a full disk) fails with an error and changes nothing: not the
// data later reads return, not what listeners were told, not what a new listener starts from.

import CanopyCore
import CanopyNet
import Foundation
import Testing

@Suite struct FullDiskTests {
    /// Runs `body` on a server whose namespaces hold 64 pages of 4 KiB (room for small writes, not for a 1 MB
    /// value), with a gate on their WAL sync.
    private func withSmallDisk(_ body: (InProcessServer, SyncGate) throws -> Void) throws {
        let gate = SyncGate()
        try withServer(configure: {
            $0.maximumPagesPerNamespace = 64
            $0.beforeWALSync = { gate.beforeSync() }
        }) { server in try body(server, gate) }
    }

    @Test func aWriteThatDoesNotFitChangesNothingAndLaterWritesWork() throws {
        try withSmallDisk { server, gate in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            #expect(try c.json("PUT", "/room.json?ns=full", #"{"a":1}"#, headers: admin).status == 200)
            let wire = WireProtocolTests()
            let (writer, early) = try wire.connectAdmins(server, "full")
            #expect(early.reply(early.request("q", ["p": "/room", "h": ""]))?["d"]?["b"]?["s"] == "ok")
            #expect(early.push("d", path: "/room")?["d"]?["b"]?["d"] == ["a": 1])

            let late = try wire.connect(server, "full")
            try wire.authAsAdmin(late, server)
            // A failed group still passes the sync stage (completions keep their order): hold it there, so the
            // next listen waits for the failed write, and must not start from it.
            gate.arm()
            let big = JSONValue.string(String(repeating: "x", count: 1_000_000))
            let failed = writer.request("p", ["p": "/room/big", "d": big])
            #expect(gate.waitUntilHeld())
            let listen = late.request("q", ["p": "/room", "h": ""])
            #expect(late.reply(late.request("s", ["c": [:]]))?["d"]?["b"]?["s"] == "ok")
            gate.release()
            let reply = try #require(writer.waitFor(timeout: 10) { $0["d"]?["r"] == .int(failed) })
            #expect(reply["d"]?["b"]?["s"] == "failure")
            #expect(late.reply(listen)?["d"]?["b"]?["s"] == "ok")
            // (Compared by keys: a failure message must not print the megabyte.)
            #expect(late.push("d", path: "/room")?["d"]?["b"]?["d"]?.members?.map(\.key) == ["a"])
            // Nothing changed: reads, and the old listener (told nothing).
            #expect(try c.json("GET", "/room.json?ns=full", headers: admin).json?.members?.map(\.key) == ["a"])
            #expect(early.push("d", path: "/room/big", timeout: 0.3) == nil)

            // The namespace goes on: a small write is stored and pushed to both.
            #expect(writer.reply(writer.request("p", ["p": "/room/b", "d": 2]))?["d"]?["b"]?["s"] == "ok")
            for listener in [early, late] {
                #expect(listener.push("d", path: "/room/b")?["d"]?["b"]?["d"] == 2)
            }
            #expect(try c.json("GET", "/room.json?ns=full", headers: admin).json == ["a": 1, "b": 2])
        }
    }

    /// The failed write's batch completes while a later one is still in flight, so the tree cannot go back to the
    /// file yet: a listen that waited for the failed write starts from a tree that still holds it. Once the later
    /// batch is done, the tree is reloaded and every listener is told what differs.
    @Test func listenersAreCorrectedWhenTheTreeGoesBackAfterAFailure() throws {
        try withSmallDisk { server, gate in
            let wire = WireProtocolTests()
            let (writer, early) = try wire.connectAdmins(server, "full2")
            #expect(writer.reply(writer.request("p", ["p": "/room/a", "d": 1]))?["d"]?["b"]?["s"] == "ok")
            #expect(early.reply(early.request("q", ["p": "/room", "h": ""]))?["d"]?["b"]?["s"] == "ok")
            let late = try wire.connect(server, "full2")
            try wire.authAsAdmin(late, server)

            gate.arm()
            let failed = writer.request("p", ["p": "/room/big", "d": .string(String(repeating: "x", count: 1_000_000))])
            #expect(gate.waitUntilHeld())
            let listen = late.request("q", ["p": "/room", "h": ""])
            #expect(late.reply(late.request("s", ["c": [:]]))?["d"]?["b"]?["s"] == "ok")
            // A later batch is committed and pushed while the failed one waits at the sync stage.
            let next = writer.request("p", ["p": "/room/b", "d": 2])
            // (Waiting without consuming the push: the views below are built from every push received.)
            let deadline = Date().addingTimeInterval(5)
            while !early.all.contains(where: { $0["d"]?["b"]?["p"] == "/room/b" }) && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.005)
            }
            gate.release()
            #expect(writer.waitFor(timeout: 10) { $0["d"]?["r"] == .int(failed) }?["d"]?["b"]?["s"] == "failure")
            #expect(writer.reply(next)?["d"]?["b"]?["s"] == "ok")
            #expect(late.reply(listen)?["d"]?["b"]?["s"] == "ok")

            // What each listener shows once everything settled: apply its pushes in order.
            Thread.sleep(forTimeInterval: 0.3)
            for (name, listener) in [("early", early), ("late", late)] {
                var view = Node.empty
                for message in listener.all where message["d"]?["a"] == "d" {
                    let path = try Path(parsing: try #require(message["d"]?["b"]?["p"]?.stringValue))
                    view = view.setting(try Node.from(json: message["d"]?["b"]?["d"] ?? .null, at: path), at: path)
                }
                let keys = view.node(at: try Path(parsing: "/room")).childKeys
                #expect(keys == ["a", "b"], "\(name): \(keys)")
            }
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            #expect(try c.json("GET", "/room.json?ns=full2", headers: admin).json == ["a": 1, "b": 2])
        }
    }

    /// A rules `PUT` whose file cannot be stored (the device is full) is a storage failure: 500, not a 400 as for
    /// invalid rules, and the rules in force stay in force.
    @Test func aRulesPutThatCannotBeStoredIsAServerErrorAndKeepsTheOldRules() throws {
        try withServer { server in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let open = #"{"rules": {".read": true, ".write": false}}"#
            #expect(try c.json("PUT", "/.settings/rules.json?ns=fullrules", open, headers: admin).status == 200)
            // New rules are written to `<ns>.rules.json.tmp` and renamed over the old file: pointing that name at
            // /dev/full makes their write fail as on a full disk (ENOSPC).
            let temporary = server.dataDirectory + "/fullrules.rules.json.tmp"
            try FileManager.default.createSymbolicLink(atPath: temporary, withDestinationPath: "/dev/full")
            let closed = #"{"rules": {".read": false, ".write": false}}"#
            let put = try c.json("PUT", "/.settings/rules.json?ns=fullrules", closed, headers: admin)
            #expect(put.status == 500, "\(put.response.text)")
            #expect(put.json?["error"]?.stringValue?.contains("could not be saved (No space left on device)") == true,
                "\(put.response.text)")
            let rules = try c.json("GET", "/.settings/rules.json?ns=fullrules", headers: admin)
            #expect(rules.json?["rules"]?[".read"] == true)
            #expect(try c.json("GET", "/x.json?ns=fullrules").status == 200)
            // Saved as it was: the link did not replace the rules file.
            let saved = try String(contentsOfFile: server.dataDirectory + "/fullrules.rules.json", encoding: .utf8)
            #expect(saved == open)
        }
    }
}
