// EarlyReadTests -- REST reads of a namespace answered from its file while its tree is still loading.

import CanopyCore
import CanopyNet
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import CanopyServer

/// Holds every namespace load once its store is open, until released (`ServerConfiguration.whileNamespaceLoads`).
private final class OpenStoreGate: Sendable {
    private let released = DispatchSemaphore(value: 0)
    private let arrived = DispatchSemaphore(value: 0)

    func hook(_ name: String) {
        arrived.signal()
        released.wait()
        released.signal()  // a latch: later loads pass too
    }

    func waitUntilHeld() -> Bool { arrived.wait(timeout: .now() + 10) == .success }
    func release() { released.signal() }
}

/// A request sent on its own thread, so the test can tell whether it is answered while a load is held.
private final class PendingRequest: Sendable {
    private let answer = Mutex<(status: Int, json: JSONValue?)?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(port: Int, _ target: String) {
        Thread { [self] in
            let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 20)
            let response = try? client.json("GET", target)
            answer.withLock { $0 = response.map { ($0.status, $0.json) } }
            done.signal()
        }.start()
    }

    /// The answer if it comes within `seconds`.
    func wait(_ seconds: Double) -> (status: Int, json: JSONValue?)? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        done.signal()
        return answer.withLock { $0 }
    }
}

@Suite struct EarlyReadTests {
    static let ns = "early"
    static let rules = #"""
        {"rules": {
          "users": {"$uid": {".read": "auth != null && auth.uid === $uid"}},
          "rooms": {"$room": {".read": "auth != null && root.child('members').child($room).child(auth.uid).exists()"}},
          "list": {".read": true, ".indexOn": ["n"]},
          "members": {".read": "auth != null && root.child('motto').val() === 'hi'"}
        }}
        """#
    static let data = #"""
        {"users": {"ada": {"name": "Ada", "age": 36}, "bob": {"name": "Bob"}},
         "rooms": {"r1": {"topic": "Swift"}},
         "members": {"r1": {"ada": true}},
         "list": {"a": {"n": 3}, "b": {"n": 1}, "c": {"n": 2}, "d": {"n": 5}},
         "motto": "hi"}
        """#

    /// A data directory holding the namespace and its rules, written by a daemon that has stopped.
    private func prepare() throws -> String {
        let server = try InProcessServer()
        let admin = [("Authorization", "Bearer \(server.admin)")]
        #expect(try server.client().json("PUT", "/.json?ns=\(Self.ns)", Self.data, headers: admin).status == 200)
        #expect(
            try server.client().json("PUT", "/.settings/rules.json?ns=\(Self.ns)", Self.rules, headers: admin).status
                == 200)
        server.stop(removeData: false)
        return server.dataDirectory
    }

    private func token(_ server: InProcessServer, uid: String) throws -> String {
        try server.daemon.credentials.mint(
            claims: ["uid": .string(uid), "ns": .string(Self.ns)], ttlSeconds: 3600, now: SystemClock().nowMilliseconds())
    }

    private func earlyReads(_ server: InProcessServer) throws -> Int? {
        let text = try server.client().request("GET", "/.canopy/metrics", headers: [
            ("Authorization", "Bearer \(server.admin)")
        ]).text
        return text.split(separator: "\n").first { $0.hasPrefix("canopy_early_reads_total ") }
            .flatMap { Int($0.split(separator: " ")[1]) }
    }

    /// Runs `body` with a daemon on the prepared directory whose loads are held once their store is open, and
    /// whose early reads take at most 6 rows.
    private func withHeldLoad(
        timeoutMilliseconds: Int? = nil, _ body: (InProcessServer, OpenStoreGate) throws -> Void
    ) throws {
        let directory = try prepare()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gate = OpenStoreGate()
        let server = try InProcessServer { configuration in
            configuration.dataDirectory = directory
            configuration.whileNamespaceLoads = { gate.hook($0) }
            configuration.earlyReadRowLimit = 6
            if let timeoutMilliseconds { configuration.namespaceLoadTimeoutMilliseconds = timeoutMilliseconds }
        }
        defer {
            gate.release()
            server.stop(removeData: false)
        }
        try body(server, gate)
    }

    @Test(.timeLimit(.minutes(1)))
    func readsThatTheFileAnswersExactlyDoNotWaitForTheLoad() throws {
        try withHeldLoad { server, gate in try readsWhileHeld(server, gate) }
    }

    private func readsWhileHeld(_ server: InProcessServer, _ gate: OpenStoreGate) throws {
        let port = server.port
        let ada = try token(server, uid: "ada")
        func ask(_ target: String, auth: String? = nil) -> PendingRequest {
            let separator = target.contains("?") ? "&" : "?"
            return PendingRequest(
                port: port, "\(target)\(separator)ns=\(Self.ns)&auth=\(auth ?? server.admin)")
        }
        // The first request starts the load, which the gate holds with the store open.
        let first = ask("/users/ada/name.json")
        #expect(gate.waitUntilHeld())
        #expect(first.wait(5)?.json == "Ada")

        // Answered while the tree is not loaded: a subtree, a leaf, a priority, a query, a shallow read, and
        // reads whose rules look only inside what was read.
        #expect(ask("/users/ada.json").wait(5)?.json == ["name": "Ada", "age": 36])
        #expect(ask("/motto.json").wait(5)?.json == "hi")
        #expect(ask("/nothing/here.json").wait(5)?.json == .null)
        #expect(ask("/users/ada/.priority.json").wait(5)?.json == .null)
        #expect(
            ask("/list.json?orderBy=%22n%22&limitToFirst=2").wait(5)?.json == ["b": ["n": 1], "c": ["n": 2]])
        #expect(
            ask("/.json?shallow=true").wait(5)?.json
                == ["users": true, "rooms": true, "members": true, "list": true, "motto": true])
        #expect(ask("/users.json?shallow=true").wait(5)?.json == ["ada": true, "bob": true])
        #expect(ask("/users/ada.json", auth: ada).wait(5)?.json == ["name": "Ada", "age": 36])
        let denied = ask("/users/bob.json", auth: ada).wait(5)
        #expect(denied?.status == 401)
        #expect(denied?.json?["error"] == "Permission denied")
        #expect(try earlyReads(server) == 10)

        // Not answered until the tree is loaded: a rule that looks outside the subtree read (members), a
        // shallow read whose rules look at data, and a subtree of more rows than the limit.
        let room = ask("/rooms/r1.json", auth: ada)
        let shallowMembers = ask("/members.json?shallow=true", auth: ada)
        let wholeTree = ask("/.json")
        #expect(room.wait(0.3) == nil)
        #expect(shallowMembers.wait(0.01) == nil)
        #expect(wholeTree.wait(0.01) == nil)
        #expect(try earlyReads(server) == 10)

        gate.release()
        #expect(room.wait(10)?.json == ["topic": "Swift"])
        #expect(shallowMembers.wait(10)?.json == ["r1": true])
        #expect(wholeTree.wait(10)?.json == (try JSONValue.parse(Self.data)))
        #expect(try earlyReads(server) == 10)
    }

    @Test(.timeLimit(.minutes(1)))
    func aLoadThatTimesOutAfterAnEarlyAnswerAnswersNothingMore() throws {
        try withHeldLoad(timeoutMilliseconds: 200) { server, gate in try timeoutAfterEarlyAnswer(server, gate) }
    }

    private func timeoutAfterEarlyAnswer(_ server: InProcessServer, _ gate: OpenStoreGate) throws {
        let early = PendingRequest(port: server.port, "/motto.json?ns=\(Self.ns)&auth=\(server.admin)")
        #expect(gate.waitUntilHeld())
        #expect(early.wait(5)?.json == "hi")
        // The request also waited for the load, which now times out: that waiter must answer nothing (a second
        // answer on the same request stopped the daemon), and a request that only waits (more rows than the limit) gets the 503.
        let waiting = PendingRequest(port: server.port, "/.json?ns=\(Self.ns)&auth=\(server.admin)")
        #expect(waiting.wait(5)?.status == 503)
        let other = try server.client().json(
            "PUT", "/v.json?ns=other", #""x""#, headers: [("Authorization", "Bearer \(server.admin)")])
        #expect(other.status == 200)
    }

    @Test(.timeLimit(.minutes(1)))
    func aReadOfAnOpenNamespaceIsNotAnEarlyRead() throws {
        let directory = try prepare()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try InProcessServer { $0.dataDirectory = directory }
        defer { server.stop(removeData: false) }
        let admin = [("Authorization", "Bearer \(server.admin)")]
        // The first read may race the load; once loaded every read goes to the tree.
        _ = try server.client().json("GET", "/motto.json?ns=\(Self.ns)", headers: admin)
        let before = try earlyReads(server)
        #expect(try server.client().json("GET", "/motto.json?ns=\(Self.ns)", headers: admin).json == "hi")
        #expect(
            try server.client().json("PUT", "/motto.json?ns=\(Self.ns)", #""changed""#, headers: admin).status == 200)
        #expect(try server.client().json("GET", "/motto.json?ns=\(Self.ns)", headers: admin).json == "changed")
        #expect(try earlyReads(server) == before)
    }
}
