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
        try metric(server, "canopy_early_reads_total")
    }

    private func connections(_ server: InProcessServer, _ transport: String) throws -> Int? {
        try metric(server, "canopy_connections{transport=\"\(transport)\"}")
    }

    /// The value of the metrics sample named `sample` (with its labels).
    private func metric(_ server: InProcessServer, _ sample: String) throws -> Int? {
        let text = try server.client().request("GET", "/.canopy/metrics", headers: [
            ("Authorization", "Bearer \(server.admin)")
        ]).text
        return text.split(separator: "\n").first { $0.hasPrefix(sample + " ") }
            .flatMap { Int($0.dropFirst(sample.count + 1)) }
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
    @Test(.timeLimit(.minutes(1)))
    func aWebSocketOpensWhileTheTreeLoadsAndItsListensAreAnsweredFromTheFile() throws {
        try withHeldLoad { server, gate in try listensWhileHeld(server, gate) }
    }

    private func listensWhileHeld(_ server: InProcessServer, _ gate: OpenStoreGate) throws {
        // The upgrade starts the load; the handshake does not wait for it.
        let client = try WireTestClient(port: server.port, namespace: Self.ns)
        #expect(gate.waitUntilHeld())
        #expect(client.waitFor { $0["t"] == "c" && $0["d"]?["t"] == "h" } != nil)
        let auth = client.request("auth", ["cred": .string(try token(server, uid: "ada"))])
        let own = client.request("q", ["p": "/users/ada", "h": ""])
        let room = client.request("q", ["p": "/rooms/r1", "h": ""])  // its rule reads /members: waits
        let other = client.request("q", ["p": "/users/bob", "h": ""])  // refused: nothing early
        let list = client.request("q", ["p": "/list", "q": ["i": "n", "l": 2, "vf": "l"], "t": 7, "h": ""])
        let ownValue = try #require(client.push("d", path: "/users/ada"))
        #expect(ownValue["d"]?["b"]?["d"] == ["name": "Ada", "age": 36])
        let listValue = try #require(client.push("d", path: "/list"))
        #expect(listValue["d"]?["b"]?["t"] == 7)
        #expect(listValue["d"]?["b"]?["d"] == ["b": ["n": 1], "c": ["n": 2]])
        // Nothing is answered, or sent for the other listens, before the tree is loaded.
        #expect(client.waitFor(timeout: 0.3) { $0["d"]?["r"] != nil || $0["d"]?["b"]?["p"] == "/rooms/r1" } == nil)
        #expect(try earlyReads(server) == 2)

        gate.release()
        #expect(client.reply(auth)?["d"]?["b"]?["s"] == "ok")
        #expect(client.reply(own)?["d"]?["b"]?["s"] == "ok")
        #expect(client.push("d", path: "/rooms/r1")?["d"]?["b"]?["d"] == ["topic": "Swift"])
        #expect(client.reply(room)?["d"]?["b"]?["s"] == "ok")
        #expect(client.reply(other)?["d"]?["b"]?["s"] == "permission_denied")
        #expect(client.reply(list)?["d"]?["b"]?["s"] == "ok")
        // The values sent early are not sent again; later changes arrive as updates.
        #expect(!client.takeAll().contains { $0["d"]?["b"]?["p"] == "/users/ada" || $0["d"]?["b"]?["p"] == "/list" })
        let admin = [("Authorization", "Bearer \(server.admin)")]
        #expect(try server.client().json("PUT", "/users/ada/age.json?ns=\(Self.ns)", "37", headers: admin).status == 200)
        #expect(client.push("d", path: "/users/ada/age")?["d"]?["b"]?["d"] == 37)
        #expect(try earlyReads(server) == 2)
    }

    @Test(.timeLimit(.minutes(1)))
    func aListenAfterAWriteWaitsForTheLoad() throws {
        try withHeldLoad { server, gate in
            let client = try WireTestClient(port: server.port, namespace: Self.ns)
            #expect(gate.waitUntilHeld())
            _ = client.request("auth", ["cred": .string(server.admin)])
            let write = client.request("p", ["p": "/motto", "d": "changed"])
            let listen = client.request("q", ["p": "/motto", "h": ""])
            // Answered from the file, the listen would show the value the write replaces.
            #expect(client.push("d", path: "/motto", timeout: 0.3) == nil)
            gate.release()
            #expect(client.reply(write)?["d"]?["b"]?["s"] == "ok")
            #expect(client.push("d", path: "/motto")?["d"]?["b"]?["d"] == "changed")
            #expect(client.reply(listen)?["d"]?["b"]?["s"] == "ok")
            #expect(try earlyReads(server) == 0)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aWebSocketWhoseLoadTimesOutIsClosed() throws {
        try withHeldLoad(timeoutMilliseconds: 200) { server, gate in
            let client = try WireTestClient(port: server.port, namespace: Self.ns)
            #expect(gate.waitUntilHeld())
            _ = client.request("auth", ["cred": .string(server.admin)])
            #expect(client.push("d", path: "/motto", timeout: 0.01) == nil)
            _ = client.request("q", ["p": "/motto", "h": ""])
            #expect(client.push("d", path: "/motto")?["d"]?["b"]?["d"] == "hi")
            #expect(client.waitUntilClosed())
            #expect(client.serverCloseCode == 1011)
        }
    }
    @Test(.timeLimit(.minutes(1)))
    func anEventStreamStartsFromTheFileWhileTheTreeLoads() throws {
        try withHeldLoad { server, gate in
            let first = PendingRequest(port: server.port, "/motto.json?ns=\(Self.ns)&auth=\(server.admin)")
            #expect(gate.waitUntilHeld())
            #expect(first.wait(5)?.json == "hi")
            let ada = try token(server, uid: "ada")
            let stream = try SSERecorder(port: server.port, path: "/users/ada.json?ns=\(Self.ns)&auth=\(ada)", headers: [])
            defer { stream.stop() }
            #expect(stream.events(atLeast: 1) == [["path": "/", "data": ["name": "Ada", "age": 36]]])
            // A stream whose rules read elsewhere, and one refused, get nothing before the load.
            #expect(PendingRequest(port: server.port, "/rooms/r1.json?ns=\(Self.ns)&auth=\(ada)").wait(0.3) == nil)
            #expect(try earlyReads(server) == 2)

            gate.release()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            #expect(try server.client().json("PUT", "/users/ada/age.json?ns=\(Self.ns)", "37", headers: admin).status == 200)
            #expect(
                try server.client().json("PUT", "/users/ada/\(SSERecorder.fence).json?ns=\(Self.ns)", "true", headers: admin)
                    .status == 200)
            // The value sent early is not sent again once the stream joins; the change follows it.
            #expect(
                stream.eventsBeforeFence() == [["path": "/", "data": ["name": "Ada", "age": 36]], ["path": "/age", "data": 37]])
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aLongPollSessionOpensWhileTheTreeLoadsAndItsListensAreAnsweredFromTheFile() throws {
        try withHeldLoad { server, gate in
            // The start request starts the load and is answered, with the handshake, before the tree is loaded.
            let client = try LongPollTestClient(port: server.port, namespace: Self.ns)
            #expect(gate.waitUntilHeld())
            #expect(client.waitFor { $0["t"] == "c" && $0["d"]?["t"] == "h" } != nil)
            client.startPolling()
            #expect(try connections(server, "long_poll") == 1)
            let auth = try client.request("auth", ["cred": .string(try token(server, uid: "ada"))])
            let own = try client.request("q", ["p": "/users/ada", "h": ""])
            let other = try client.request("q", ["p": "/users/bob", "h": ""])  // refused: nothing early
            let ownValue = try #require(client.push("d", path: "/users/ada"))
            #expect(ownValue["d"]?["b"]?["d"] == ["name": "Ada", "age": 36])
            #expect(client.waitFor(timeout: 0.3) { $0["d"]?["r"] != nil || $0["d"]?["b"]?["p"] == "/users/bob" } == nil)
            #expect(try earlyReads(server) == 1)

            gate.release()
            #expect(client.reply(auth)?["d"]?["b"]?["s"] == "ok")
            #expect(client.reply(own)?["d"]?["b"]?["s"] == "ok")
            #expect(client.reply(other)?["d"]?["b"]?["s"] == "permission_denied")
            // The value sent early is not sent again; later changes arrive as updates on the same session.
            let admin = [("Authorization", "Bearer \(server.admin)")]
            #expect(try server.client().json("PUT", "/users/ada/age.json?ns=\(Self.ns)", "37", headers: admin).status == 200)
            #expect(client.push("d", path: "/users/ada/age")?["d"]?["b"]?["d"] == 37)
            #expect(!client.messages.contains { $0["d"]?["b"]?["p"] == "/users/ada" })
            #expect(try connections(server, "long_poll") == 1)
            #expect(try earlyReads(server) == 1)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aLongPollSessionWhoseLoadTimesOutIsClosed() throws {
        try withHeldLoad(timeoutMilliseconds: 300) { server, gate in
            let client = try LongPollTestClient(port: server.port, namespace: Self.ns)
            #expect(gate.waitUntilHeld())
            client.startPolling()
            try client.request("auth", ["cred": .string(server.admin)])
            try client.request("q", ["p": "/motto", "h": ""])
            #expect(client.push("d", path: "/motto")?["d"]?["b"]?["d"] == "hi")
            // The held poll is answered with the close command, and the session is gone.
            let deadline = Date().addingTimeInterval(5)
            while client.closeCommands == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            #expect(client.closeCommands == 1)
            #expect(try connections(server, "long_poll") == 0)
        }
    }
}
