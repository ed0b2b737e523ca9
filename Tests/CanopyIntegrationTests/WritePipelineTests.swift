// WritePipelineTests -- every write path reaches the store through one policy decision (`Namespace.perform`).
//
// The namespace's policy is replaced by one that records every request and allows only what the test says. If a
// front end committed without asking the policy (as the admin endpoints once did, checking `isEventAdmin` on their
// own), a write would land while the policy refused it, and this test fails.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization
import Testing

@testable import CanopyServer

/// Records every decision asked of it; allows when `allowing` is set.
final class RecordingPolicy: AccessPolicy {
    let allowing: Atomic<Bool>
    private let asked = Mutex<[String]>([])

    init(allowing: Bool) { self.allowing = Atomic(allowing) }

    func decide(_ request: AccessRequest) -> AccessDecision {
        let kind: String
        switch request.operation {
        case .read: kind = "read"
        case .write: kind = "write"
        case .update: kind = "update"
        case .admin(let action): kind = "admin:\(action)"
        }
        asked.withLock { $0.append("\(kind) \(request.path)") }
        return allowing.load(ordering: .relaxed) ? .allow("test") : .deny("test")
    }

    /// The decisions asked since the last call.
    func take() -> [String] { asked.withLock { list in defer { list = [] }; return list } }
}

@Suite struct WritePipelineTests {
    /// Runs `body` on the daemon's loop with namespace `name` and waits for it.
    private func onLoop(_ server: InProcessServer, _ name: String, _ body: @escaping @Sendable (Namespace) -> Void) {
        let done = DispatchSemaphore(value: 0)
        server.daemon.withNamespace(name) { namespace in
            body(namespace)
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
    }

    private func tree(_ server: InProcessServer, _ name: String) -> JSONValue {
        let value = Mutex<JSONValue>(.null)
        onLoop(server, name) { namespace in value.withLock { $0 = namespace.root.json() } }
        return value.withLock { $0 }
    }

    @Test func noWritePathReachesTheStoreWithoutAnAllowingDecision() throws {
        try withServer { server in
            let ns = "seam"
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let event = #"{"private":{"admin":{"pendingContent":{"a":{"title":"T","type":"text","text":"x","order":1,"visibility":{"everyone":true}}}}}}"#
            #expect(try c.json("PUT", "/.json?ns=\(ns)", event, headers: admin).status == 200)
            let policy = RecordingPolicy(allowing: false)
            onLoop(server, ns) { $0.policy = policy }
            let before = tree(server, ns)

            // Every REST write, as the admin credential: refused by the policy, so nothing changes.
            let rest: [(String, String, String?, [(String, String)])] = [
                ("PUT", "/x", "1", []), ("PUT", "/x", "1", [("If-Match", "null_etag")]), ("POST", "/x", "1", []),
                ("PATCH", "/", #"{"x":1}"#, []), ("DELETE", "/private", nil, []),
                ("PUT", "/", #"{"imported":true}"#, []),  // `canopy import` over HTTP
            ]
            for (method, path, body, extra) in rest {
                let answer = try c.json(method, "\(path).json?ns=\(ns)", body, headers: admin + extra)
                #expect(answer.status == 401, "\(method) \(path)")
            }
            for action in ["publish", "publish?item=a", "unpublish?item=a", "revert", "rollback?to=1"] {
                let sep = action.contains("?") ? "&" : "?"
                let answer = try c.json("POST", "/.canopy/\(action)\(sep)ns=\(ns)", headers: admin)
                #expect(answer.status == 401, "\(action)")
            }
            #expect(try c.json("GET", "/.canopy/status?ns=\(ns)", headers: admin).status == 401)

            // Every wire write, and onDisconnect operations, also as the admin.
            let wire = WireProtocolTests()
            let socket = try wire.connect(server, ns)
            try wire.authAsAdmin(socket, server)
            for (action, body) in [
                ("p", ["p": "/x", "d": 1] as JSONValue), ("p", ["p": "/x", "d": 1, "h": ""]),
                ("m", ["p": "/", "d": ["x": 1]]), ("o", ["p": "/x", "d": 1]), ("om", ["p": "/", "d": ["x": 1]]),
            ] {
                let status = socket.reply(socket.request(action, body))?["d"]?["b"]?["s"]
                #expect(status == "permission_denied", "\(action)")
            }
            let refused = policy.take()
            #expect(refused.count == rest.count + 6 + 5, "\(refused)")
            #expect(tree(server, ns) == before)

            // onDisconnect: queued while allowed, run when the socket goes: the policy decides again, and refuses.
            policy.allowing.store(true, ordering: .relaxed)
            let late = try wire.connect(server, ns)
            try wire.authAsAdmin(late, server)
            #expect(late.reply(late.request("o", ["p": "/gone", "d": 1]))?["d"]?["b"]?["s"] == "ok")
            policy.allowing.store(false, ordering: .relaxed)
            _ = policy.take()
            late.close()
            #expect(waitUntil { policy.take().contains("write /gone") })
            #expect(tree(server, ns) == before)

            // Allowed, each path writes, and was asked once.
            policy.allowing.store(true, ordering: .relaxed)
            #expect(try c.json("PUT", "/x.json?ns=\(ns)", "2", headers: admin).status == 200)
            #expect(try c.json("POST", "/.canopy/publish?ns=\(ns)", headers: admin).status == 200)
            #expect(policy.take() == ["write /x", "admin:publish /", "admin:publish /"])
            #expect(tree(server, ns)["x"] == 2)
            #expect(tree(server, ns)["public"]?["admin"]?["content"]?["a"] != nil)
        }
    }
}

extension WritePipelineTests {
    /// A failed `if-match` answers the current value: only to someone who may read it.
    @Test func aFailedConditionShowsTheDataOnlyToAReader() throws {
        try withServer { server in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let rules = #"{"rules": {"drop": {".write": true}, "open": {".read": true, ".write": true}}}"#
            #expect(try c.json("PUT", "/.settings/rules.json?ns=cond", rules, headers: admin).status == 200)
            #expect(try c.json("PUT", "/drop.json?ns=cond", #""secret""#, headers: admin).status == 200)
            #expect(try c.json("PUT", "/open.json?ns=cond", #""seen""#, headers: admin).status == 200)
            let blind = try c.json("PUT", "/drop.json?ns=cond", "1", headers: [("If-Match", "stale")])
            #expect(blind.status == 401)
            #expect(blind.response.header("etag") == nil)
            #expect(blind.json?["error"] == "Permission denied")
            let reader = try c.json("PUT", "/open.json?ns=cond", "1", headers: [("If-Match", "stale")])
            #expect(reader.status == 412)
            #expect(reader.json == "seen")
            #expect(try c.json("GET", "/drop.json?ns=cond", headers: admin).json == "secret")
        }
    }
}

/// Polls `condition` for up to `seconds` (for effects another thread produces).
func waitUntil(seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return condition()
}
