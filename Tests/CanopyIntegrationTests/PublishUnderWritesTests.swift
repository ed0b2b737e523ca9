// PublishUnderWritesTests -- a publish is computed on the compute thread while the event goes on being written.
// Writes where the engine reads nothing (a chat, an attendee's data beside their `content`) must not make it fail:
// its writes are committed on the tree as it is then, with the store rows made again from that tree. A write where
// it reads (a draft, a derived location) makes it compute again. A gate on the namespace's compute thread holds
// each computation until the test has written, so every interleaving is forced, not hoped for.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization
import Testing

@testable import CanopyServer

/// Holds each piece of work handed to a namespace's compute thread until the test lets it go.
final class ComputeGate: Sendable {
    private let started = DispatchSemaphore(value: 0)
    private let go = DispatchSemaphore(value: 0)
    let handed = Atomic<Int>(0)

    /// The namespace's `offLoop`, with every piece of work held at the gate first.
    func wrap(_ original: @escaping (@escaping @Sendable () -> Void) -> Void)
        -> (@escaping @Sendable () -> Void) -> Void
    {
        { [self] work in
            handed.add(1, ordering: .relaxed)
            original { [self] in
                started.signal()
                _ = go.wait(timeout: .now() + 20)
                work()
            }
        }
    }

    /// Whether a piece of work reached the gate within `seconds`.
    func waitForWork(seconds: Double) -> Bool { started.wait(timeout: .now() + seconds) == .success }

    /// Lets the held piece of work run.
    func release() { go.signal() }
}

@Suite struct PublishUnderWritesTests {
    static let ns = "busy"

    static let event = """
        {"private": {
           "admin": {"pendingContent": {
             "a": {"order": 1, "type": "text", "text": "for everyone", "checkAll": true},
             "b": {"order": 2, "type": "text", "text": "for u1", "attendeeIds": ["u1"]},
             "c": {"order": 3, "type": "text", "text": "for u2", "attendeeIds": ["u2"]}}},
           "adminable": {"users": {
             "u1": {"content": {"old": {"order": 9, "type": "text", "text": "stale"}}},
             "u9": {"content": {"gone": {"order": 9, "type": "text", "text": "no longer for u9"}}}}}},
         "chat": {"m0": "hello"}}
        """

    /// Installs `gate` on the namespace's compute thread.
    private func install(_ gate: ComputeGate, _ server: InProcessServer) {
        let done = DispatchSemaphore(value: 0)
        server.daemon.withNamespace(Self.ns) { namespace in
            if let original = namespace.offLoop { namespace.offLoop = gate.wrap(original) }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
    }

    /// Starts `POST /.canopy/publish` on a thread of its own; the returned closure waits for its status.
    private func publishInBackground(_ server: InProcessServer) -> () -> Int? {
        let status = Mutex<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        let admin = server.admin
        let port = server.port
        Thread {
            let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 30)
            let answer = try? client.json("POST", "/.canopy/publish?ns=\(Self.ns)", headers: [("Authorization", "Bearer \(admin)")])
            status.withLock { $0 = answer?.status }
            done.signal()
        }.start()
        return {
            guard done.wait(timeout: .now() + 30) == .success else { return nil }
            return status.withLock { $0 }
        }
    }

    /// Writes the event, holds the namespace's compute thread at a gate and starts a publish: the client and
    /// headers to write with, the gate, and the wait for the publish's status.
    private func startPublishing(_ server: InProcessServer) throws
        -> (HTTPClient, [(String, String)], ComputeGate, () -> Int?)
    {
        let c = server.client()
        let admin = [("Authorization", "Bearer \(server.admin)")]
        #expect(try c.json("PUT", "/.json?ns=\(Self.ns)", Self.event, headers: admin).status == 200)
        let gate = ComputeGate()
        install(gate, server)
        return (c, admin, gate, publishInBackground(server))
    }

    @Test func writesElsewhereDoNotMakeAPublishFailAndItsRowsFollowTheTreeItLandsOn() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        var published: JSONValue?
        try withServer(configure: { $0.dataDirectory = data }) { server in
            let (c, admin, gate, status) = try startPublishing(server)

            // Every computation is overtaken by a write elsewhere: before, the publish failed after three.
            var writes = 0
            while gate.waitForWork(seconds: 3) {
                writes += 1
                #expect(try c.json("PUT", "/chat/m\(writes).json?ns=\(Self.ns)", "\"busy\"", headers: admin).status == 200)
                if writes == 1 {
                    // Beside the content the publish deletes whole: computed against the tree it read, its rows
                    // would delete all of u9 on disk, this profile with it.
                    let profile = "/private/adminable/users/u9/profile.json?ns=\(Self.ns)"
                    #expect(try c.json("PUT", profile, #"{"name": "Nine"}"#, headers: admin).status == 200)
                    let beside = "/private/adminable/users/u1/profile.json?ns=\(Self.ns)"
                    #expect(try c.json("PUT", beside, #"{"name": "One"}"#, headers: admin).status == 200)
                }
                gate.release()
            }
            #expect(status() == 200)
            // The build and `offLoopRebases` rebases on the compute thread; the last rebase ran on the loop.
            #expect(gate.handed.load(ordering: .relaxed) == 1 + Namespace.offLoopRebases)
            #expect(writes == 1 + Namespace.offLoopRebases)

            let tree = try #require(try c.json("GET", "/.json?ns=\(Self.ns)", headers: admin).json)
            let users = tree["private"]?["adminable"]?["users"]
            #expect(tree["public"]?["admin"]?["content"]?["a"]?["text"] == "for everyone")
            #expect(users?["u1"]?["content"]?["b"]?["text"] == "for u1")
            #expect(users?["u1"]?["content"]?["old"] == nil)
            #expect(users?["u1"]?["profile"] == ["name": "One"])
            #expect(users?["u2"]?["content"]?["c"]?["text"] == "for u2")
            #expect(users?["u9"] == ["profile": ["name": "Nine"]])
            #expect(tree["private"]?["admin"]?["content"]?["c"] != nil)
            for m in 0...writes { #expect(tree["chat"]?["m\(m)"] != nil, "chat/m\(m)") }
            published = tree
        }
        // What was acknowledged is what the file holds.
        try withServer(configure: { $0.dataDirectory = data }) { server in
            let reopened = try server.client().json(
                "GET", "/.json?ns=\(Self.ns)", headers: [("Authorization", "Bearer \(server.admin)")])
            #expect(reopened.json == published)
        }
    }

    @Test func aWriteWhereThePublishReadsMakesItComputeAgain() throws {
        try withServer { server in
            let (c, admin, gate, status) = try startPublishing(server)

            // First a draft changes, then a derived location: each time the work done is thrown away.
            #expect(gate.waitForWork(seconds: 10))
            let draft = "/private/admin/pendingContent/a/text.json?ns=\(Self.ns)"
            #expect(try c.json("PUT", draft, "\"edited meanwhile\"", headers: admin).status == 200)
            gate.release()
            #expect(gate.waitForWork(seconds: 10))
            let derived = "/private/adminable/users/u2/content/stray.json?ns=\(Self.ns)"
            #expect(try c.json("PUT", derived, #"{"order": 5, "type": "text", "text": "x"}"#, headers: admin).status == 200)
            gate.release()
            #expect(gate.waitForWork(seconds: 10))
            gate.release()
            #expect(status() == 200)
            #expect(gate.handed.load(ordering: .relaxed) == 3)

            let tree = try #require(try c.json("GET", "/.json?ns=\(Self.ns)", headers: admin).json)
            #expect(tree["public"]?["admin"]?["content"]?["a"]?["text"] == "edited meanwhile")
            #expect(tree["private"]?["adminable"]?["users"]?["u2"]?["content"]?["stray"] == nil)
            #expect(tree["private"]?["adminable"]?["users"]?["u2"]?["content"]?["c"]?["text"] == "for u2")
        }
    }
}
