// ClusterProxyTests -- REST proxied by a non-owner over keep-alive connections to the owner (ProxyConnectionPool),
// against real processes: the owner accepts one connection for many proxied requests of any method, and the
// owner's refusals come back unchanged. The pool's bookkeeping (expiry, bound, what may be resent) is tested
// without sockets, on a ManualClock.

import CanopyCore
import CanopyNet
import CanopyTestSupport
import Foundation
import Testing

@testable import CanopyServer

@Suite(.serialized, .enabled(if: NATSTestCluster.binary != nil, "nats-server is not installed"))
struct ClusterProxyTests {
    /// The owner's `canopy_connections_accepted_total`, read on one keep-alive connection of its own.
    private static func accepted(_ metrics: HTTPClient, _ cluster: CanopyCluster) throws -> Double? {
        let response = try metrics.request("GET", "/.canopy/metrics", headers: cluster.adminHeader)
        return metricSample(response.text, "canopy_connections_accepted_total")
    }

    @Test(.timeLimit(.minutes(2))) func proxiedRequestsOfEveryMethodShareOneConnectionToTheOwner() throws {
        let cluster = try CanopyCluster(count: 2)
        defer { cluster.stop() }
        let ns = "pooled"
        #expect(try cluster.request("PUT", "/room.json?ns=\(ns)", body: #"{"n":0}"#, via: 0).status == 200)
        let owner = try cluster.owner(of: ns)
        let other = 1 - owner
        let metrics = HTTPClient(host: "127.0.0.1", port: cluster.ports[owner], timeoutSeconds: 10)
        defer { metrics.close() }
        func proxied(_ method: String, _ target: String, _ body: String = "") throws -> HTTPClientResponse {
            // A new client connection to the proxying node each time: only the proxy can keep one to the owner.
            let client = HTTPClient(host: "127.0.0.1", port: cluster.ports[other], timeoutSeconds: 10)
            defer { client.close() }
            let response = try client.request(method, target, headers: cluster.adminHeader, body: Array(body.utf8))
            #expect(response.header("x-canopy-owner") == "http://127.0.0.1:\(cluster.ports[owner])")
            return response
        }
        #expect(try proxied("GET", "/room.json?ns=\(ns)").text == #"{"n":0}"#)  // opens the pooled connection
        let before = try #require(try Self.accepted(metrics, cluster))
        for n in 1...4 {
            #expect(try proxied("PUT", "/room/n.json?ns=\(ns)", "\(n)").status == 200)
            #expect(try proxied("PATCH", "/room.json?ns=\(ns)", #"{"p\#(n)":true}"#).status == 200)
            #expect(try proxied("POST", "/room/log.json?ns=\(ns)", "\(n)").status == 200)
            #expect(try proxied("GET", "/room/n.json?ns=\(ns)").text == "\(n)")
        }
        #expect(try proxied("DELETE", "/room/p1.json?ns=\(ns)").status == 200)
        let room = try JSONValue.parse(try proxied("GET", "/room.json?ns=\(ns)").body)
        #expect(room["n"] == 4 && room["p1"] == nil && room["p4"] == true)
        guard case .object(let log)? = room["log"] else {
            Issue.record("no log: \(room.serialized())")
            return
        }
        #expect(log.count == 4)
        // 19 proxied requests after the first: the owner accepted no other connection.
        #expect(try Self.accepted(metrics, cluster) == before)
    }

    @Test(.timeLimit(.minutes(2))) func aWriteTheOwnerRefusesIsPassedThroughUnchanged() throws {
        let cluster = try CanopyCluster(count: 2)
        defer { cluster.stop() }
        let ns = "guarded"
        #expect(try cluster.request("PUT", "/open.json?ns=\(ns)", body: "0", via: 0).status == 200)
        let owner = try cluster.owner(of: ns)
        let other = 1 - owner
        let rules = #"{"rules": {".read": true, "open": {".write": true}, "locked": {".write": false}}}"#
        #expect(try cluster.request("PUT", "/.settings/rules.json?ns=\(ns)", body: rules, via: owner).status == 200)
        func send(_ via: Int, _ method: String, _ target: String, _ body: String) throws -> HTTPClientResponse {
            let client = HTTPClient(host: "127.0.0.1", port: cluster.ports[via], timeoutSeconds: 10)
            defer { client.close() }
            return try client.request(method, target, body: Array(body.utf8))  // no credential: the rules judge
        }
        let refusals: [(String, String, String)] = [
            ("PUT", "/locked.json?ns=\(ns)", #""mine""#),  // denied by the rules
            ("PATCH", "/.json?ns=\(ns)", #"{"locked/x":1}"#),  // denied by the rules, inside an update
            ("PUT", "/open.json?ns=\(ns)", #"{"unterminated"#),  // not JSON
        ]
        for (method, target, body) in refusals {
            let direct = try send(owner, method, target, body)
            let proxied = try send(other, method, target, body)
            #expect((400..<500).contains(direct.status), "\(method) \(target): \(direct.status) \(direct.text)")
            #expect(proxied.status == direct.status, "\(method) \(target): \(proxied.status) \(proxied.text)")
            #expect(proxied.text == direct.text, "\(method) \(target)")
            #expect(proxied.header("content-type") == direct.header("content-type"))
            #expect(proxied.header("x-canopy-owner") == "http://127.0.0.1:\(cluster.ports[owner])")
        }
        // Nothing refused was written, and the connection the refusals rode on still carries writes.
        #expect(try cluster.request("GET", "/locked.json?ns=\(ns)", via: owner).json == .null)
        #expect(try send(other, "PUT", "/open.json?ns=\(ns)", "1").status == 200)
        #expect(try cluster.request("GET", "/open.json?ns=\(ns)", via: owner).json == 1)
    }
}

@Suite struct ProxyPoolStateTests {
    private final class Connection {
        let id: Int
        init(_ id: Int) { self.id = id }
    }

    private static let second: UInt64 = 1_000_000_000

    @Test func theMostRecentlyReturnedConnectionIsReusedAndIdleOnesExpire() {
        var pool = ProxyPoolState<Connection>(maximumIdlePerOwner: 4, idleTimeoutNanoseconds: 15 * Self.second)
        #expect(pool.checkOut(owner: "a", now: 0).connection == nil)
        #expect(pool.checkIn(Connection(1), owner: "a", now: 1 * Self.second).isEmpty)
        #expect(pool.checkIn(Connection(2), owner: "a", now: 2 * Self.second).isEmpty)
        #expect(pool.checkIn(Connection(3), owner: "b", now: 2 * Self.second).isEmpty)
        #expect(pool.checkOut(owner: "a", now: 3 * Self.second).connection?.id == 2)
        #expect(pool.idleCount == 2)
        // At 16 s connection 1 (idle since 1 s) has expired; 3 (since 2 s) has not, by a second.
        let (connection, expired) = pool.checkOut(owner: "a", now: 16 * Self.second)
        #expect(connection == nil && expired.map(\.id) == [1])
        #expect(pool.sweep(now: 17 * Self.second).map(\.id) == [3])
        #expect(pool.idleCount == 0)
    }

    @Test func anOwnerKeepsAtMostTheBoundIdleAndTheOldestIsClosed() {
        var pool = ProxyPoolState<Connection>(maximumIdlePerOwner: 2, idleTimeoutNanoseconds: 15 * Self.second)
        #expect(pool.checkIn(Connection(1), owner: "a", now: 0).isEmpty)
        #expect(pool.checkIn(Connection(2), owner: "a", now: 0).isEmpty)
        #expect(pool.checkIn(Connection(3), owner: "a", now: 0).map(\.id) == [1])
        #expect(pool.checkIn(Connection(4), owner: "b", now: 0).isEmpty)
        #expect(pool.idleCount == 3)
    }

    @Test(arguments: [("GET", true), ("HEAD", true), ("OPTIONS", true), ("PUT", false), ("PATCH", false),
        ("POST", false), ("DELETE", false)])
    func onlyRequestsARepeatCannotChangeAreResent(method: String, resent: Bool) {
        #expect(ProxyConnectionPool.mayResend(method) == resent)
    }

    /// The pool against a real single-node server: reuse, then expiry by the injected clock.
    @Test(.timeLimit(.minutes(1))) func aConnectionIsReusedUntilItHasBeenIdleForTheTimeout() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try ServerProcess(dataDirectory: data)
        defer { server.terminate() }
        let clock = ManualClock()
        let pool = ProxyConnectionPool(idleTimeoutMilliseconds: 1_000, clock: clock)
        let admin = [("Authorization", "Bearer \(server.admin)")]
        for n in 1...3 {
            let put = try pool.request(
                host: "127.0.0.1", port: server.port, "PUT", "/n.json", headers: admin, body: Array("\(n)".utf8))
            #expect(put.status == 200)
        }
        #expect(pool.openedCount == 1 && pool.idleCount == 1)
        clock.advance(byMilliseconds: 999)
        pool.sweep()
        #expect(pool.idleCount == 1)
        clock.advance(byMilliseconds: 1)
        pool.sweep()
        #expect(pool.idleCount == 0)
        let get = try pool.request(host: "127.0.0.1", port: server.port, "GET", "/n.json", headers: admin, body: [])
        #expect(get.text == "3")
        #expect(pool.openedCount == 2 && pool.idleCount == 1)
    }
}
