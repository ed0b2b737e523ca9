// ClusterTests -- `canopy serve --cluster` against real processes (Cluster.md): three nats-server processes with
// JetStream and three Canopy nodes on loopback. Placement and redirects, the wire protocol's reset, failover
// after `kill -9` with every acknowledged write, fencing of a paused owner, the loss of a NATS server, and a
// publish across failover.

import CanopyClient
import CanopyCore
import CanopyNet
import CanopyNATS
@testable import CanopyServer
import CanopyTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.serialized, .enabled(if: NATSTestCluster.binary != nil, "nats-server is not installed"))
struct ClusterTests {
    /// Other nodes proxy REST to the owner (the default) or redirect to it (`--cluster-rest redirect`).
    @Test(arguments: [false, true])
    func namespacesArePlacedOnOneOwnerAndOtherNodesSendClientsThere(redirectREST: Bool) throws {
        let cluster = try CanopyCluster(redirectREST: redirectREST)
        defer { cluster.stop() }
        let names = (1...9).map { "event\($0)" }
        for (i, ns) in names.enumerated() {
            let put = try cluster.request("PUT", "/info.json?ns=\(ns)", body: #"{"name":"\#(ns)"}"#, via: i % 3)
            #expect(put.status == 200, "PUT \(ns): \(put.status) \(put.json?.serialized() ?? "")")
        }
        var owners: Set<Int> = []
        for ns in names {
            // Every node agrees on the owner: it answers itself, the others send the client to it.
            let owner = try cluster.owner(of: ns, asking: 0)
            owners.insert(owner)
            for index in 0..<3 {
                let client = HTTPClient(host: "127.0.0.1", port: cluster.ports[index], timeoutSeconds: 10)
                defer { client.close() }
                let response = try client.request("GET", "/info/name.json?ns=\(ns)", headers: cluster.adminHeader)
                if index == owner {
                    #expect(response.status == 200 && response.text == "\"\(ns)\"", "owner c\(owner + 1) of \(ns)")
                    #expect(response.header("x-canopy-owner") == nil)
                } else if !redirectREST {
                    // Proxied: the same answer, naming the node that gave it.
                    #expect(response.status == 200 && response.text == "\"\(ns)\"", "c\(index + 1) for \(ns)")
                    #expect(response.header("x-canopy-owner") == "http://127.0.0.1:\(cluster.ports[owner])")
                } else {
                    #expect(response.status == 307, "c\(index + 1) for \(ns): \(response.status) \(response.text)")
                    #expect(response.header("location") == "http://127.0.0.1:\(cluster.ports[owner])/info/name.json?ns=\(ns)")
                    #expect(response.text.contains("error"))
                }
            }
        }
        // Rendezvous placement spreads nine namespaces over more than one node.
        #expect(owners.count >= 2, "every namespace on one node: \(owners)")

        if !redirectREST {
            // An event stream opened on a non-owner is relayed from the owner, live.
            let ns = names[1]
            let owner = try cluster.owner(of: ns)
            let other = (owner + 2) % 3
            let stream = HTTPClient(host: "127.0.0.1", port: cluster.ports[other], timeoutSeconds: 10)
            defer { stream.close() }
            let head = try stream.openStream(
                "/info.json?ns=\(ns)", headers: cluster.adminHeader + [("Accept", "text/event-stream")])
            #expect(head.status == 200 && head.header("content-type")?.hasPrefix("text/event-stream") == true)
            var text = ""
            func read(until needle: String) throws {
                let deadline = Date().addingTimeInterval(10)
                while !text.contains(needle) && Date() < deadline { text += String(decoding: try stream.readChunk(), as: UTF8.self) }
            }
            try read(until: "\"name\":\"\(ns)\"")
            #expect(text.contains("event: put"))
            #expect(try cluster.request("PUT", "/info/name.json?ns=\(ns)", body: #""renamed""#, via: owner).status == 200)
            try read(until: "renamed")
            #expect(text.contains(#"{"path":"/name","data":"renamed"}"#), "\(text)")
        }

        // The wire protocol: a non-owner answers the WebSocket with Firebase's reset naming the owner's host.
        let ns = names[0]
        let owner = try cluster.owner(of: ns)
        let other = (owner + 1) % 3
        let wire = try WireTestClient(port: cluster.ports[other], namespace: ns)
        let reset = wire.waitFor { $0["t"] == "c" }
        #expect(reset?.serialized() == #"{"t":"c","d":{"t":"r","d":"127.0.0.1:\#(cluster.ports[owner])"}}"#)
        #expect(wire.waitUntilClosed())
    }

    @Test func aClientOfAnotherNodeFollowsTheResetToTheOwner() async throws {
        let cluster = try CanopyCluster()
        defer { cluster.stop() }
        let ns = "follow"
        #expect(try cluster.request("PUT", "/greeting.json?ns=\(ns)", body: #""hello""#, via: 0).status == 200)
        let owner = try cluster.owner(of: ns)
        let other = (owner + 1) % 3
        // Configured with a node that does not own the namespace: the client is reset to the owner, listens and
        // writes there, and its own write's event comes before its acknowledgement.
        let db = try clientDatabase(port: cluster.ports[other], namespace: ns, token: cluster.admin)
        let recorder = SnapshotRecorder(db.ref("greeting"))
        #expect(await eventually { recorder.last == "hello" })
        try await db.ref("greeting").setValue("hi from the client").synced()
        #expect(recorder.last == "hi from the client")
        let read = try cluster.request("GET", "/greeting.json?ns=\(ns)", via: owner)
        #expect(read.json == "hi from the client" && read.node == owner)
        // These nodes advertise IP literals, which the JS SDK never forgets once reset to them: each says so.
        #expect(cluster.log(owner).contains("event=cluster.advertise_not_cacheable"))
        await db.close()
    }

    @Test func killingTheOwnerLosesNoAcknowledgedWriteAndListenersResume() async throws {
        let cluster = try CanopyCluster()
        defer { cluster.stop() }
        let ns = "failover"
        #expect(try cluster.request("PUT", "/items/0.json?ns=\(ns)", body: "0", via: 0).status == 200)
        let owner = try cluster.owner(of: ns)
        let listenerNode = (owner + 1) % 3
        let db = try clientDatabase(port: cluster.ports[listenerNode], namespace: ns, token: cluster.admin)
        let recorder = SnapshotRecorder(db.ref("items"))
        #expect(await eventually { recorder.last?.objectCount == 1 })

        // A writer that counts a write only when it was acknowledged, and retries on any node otherwise.
        var acknowledged: [Int] = [0]
        var killedAt: Date?
        var firstAfterKill: Date?
        var item = 1
        while item <= 60 {
            if item == 31 && killedAt == nil {
                cluster.kill9(owner)
                killedAt = Date()
            }
            let via = killedAt == nil ? owner : (owner + 1 + item % 2) % 3
            let answer = try? cluster.request("PUT", "/items/\(item).json?ns=\(ns)", body: "\(item)", via: via, timeout: 15)
            if answer?.status == 200 {
                acknowledged.append(item)
                if killedAt != nil && firstAfterKill == nil { firstAfterKill = Date() }
                item += 1
            } else {
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            #expect(Date().timeIntervalSince(killedAt ?? Date()) < 30, "no new owner within 30 s")
            if let killedAt, Date().timeIntervalSince(killedAt) > 30 { break }
        }
        let failover = firstAfterKill.map { $0.timeIntervalSince(killedAt!) } ?? -1
        #expect(failover > 0 && failover < 10, "owner killed → first write accepted: \(failover) s")
        let newOwner = try cluster.owner(of: ns, asking: listenerNode)
        #expect(newOwner != owner)
        let stored = try cluster.request("GET", "/items.json?ns=\(ns)", via: newOwner).json
        for value in acknowledged {
            #expect(stored?.member(value) == .int(Int64(value)), "acknowledged write \(value) is missing")
        }
        #expect(cluster.log(newOwner).contains("cluster.claimed"))
        // The listener's client was reset by nobody (its node died under it): it reconnects, is sent to the new
        // owner, and its listen resumes with every item, none missing.
        let expected = acknowledged.count
        #expect(await eventually(timeout: 20) { recorder.last?.objectCount == expected },
            "listener has \(recorder.last?.objectCount ?? 0) of \(expected)")
        await db.close()
    }

    @Test func aPausedOwnerIsFencedWhenItResumes() throws {
        let cluster = try CanopyCluster()
        defer { cluster.stop() }
        let ns = "fence"
        #expect(try cluster.request("PUT", "/x.json?ns=\(ns)", body: #""before""#, via: 0).status == 200)
        let owner = try cluster.owner(of: ns)
        // A keep-alive connection to the owner, used again after the pause.
        let stale = HTTPClient(host: "127.0.0.1", port: cluster.ports[owner], timeoutSeconds: 20)
        defer { stale.close() }
        #expect(try stale.request("GET", "/x.json?ns=\(ns)", headers: cluster.adminHeader).status == 200)

        cluster.signal(owner, SIGSTOP)
        let other = (owner + 1) % 3
        var newWrite: (status: Int, json: JSONValue?, node: Int)?
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            newWrite = try? cluster.request("PUT", "/x.json?ns=\(ns)", body: #""new owner""#, via: other, timeout: 3)
            if newWrite?.status == 200 && newWrite?.node != owner { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(newWrite?.status == 200 && newWrite?.node != owner, "no other node took the namespace over")
        let newOwner = newWrite?.node ?? other

        // The old owner resumes believing it owns the namespace; the write it is handed must not be stored.
        cluster.signal(owner, SIGCONT)
        let answer = try stale.request("PUT", "/x.json?ns=\(ns)", headers: cluster.adminHeader, body: Array(#""stale""#.utf8))
        #expect(answer.status != 200, "the paused owner acknowledged a write after losing the namespace")
        #expect(try cluster.request("GET", "/x.json?ns=\(ns)", via: newOwner).json == "new owner")
        // From then on it sends clients to the new owner.
        Thread.sleep(forTimeInterval: 1)
        let after = try cluster.request("GET", "/x.json?ns=\(ns)", via: owner)
        #expect(after.json == "new owner" && after.node == newOwner)
        #expect(cluster.log(owner).contains("cluster.lease_lost") || cluster.log(owner).contains("cluster.deposed"))
    }

    @Test func losingOneNATSServerLosesNoWrite() throws {
        let cluster = try CanopyCluster()
        defer { cluster.stop() }
        let ns = "natsloss"
        var acknowledged = 0
        for item in 0..<40 {
            if item == 20 { cluster.nats.kill(0) }
            var done = false
            let deadline = Date().addingTimeInterval(20)
            while !done && Date() < deadline {
                let answer = try? cluster.request("PUT", "/items/\(item).json?ns=\(ns)", body: "\(item)", via: 1, timeout: 15)
                done = answer?.status == 200
                if !done { Thread.sleep(forTimeInterval: 0.2) }
            }
            #expect(done, "write \(item) not acknowledged with one NATS server down")
            if done { acknowledged += 1 }
        }
        let stored = try cluster.request("GET", "/items.json?ns=\(ns)", via: 1).json
        #expect(stored?.arrayValue?.count == acknowledged || stored?.objectCount == acknowledged)
    }

    @Test func aPublishAndTheRulesSurviveFailover() throws {
        let cluster = try CanopyCluster()
        defer { cluster.stop() }
        let ns = "summit"
        let document = try ExportDocument.parse(
            Array(try String(contentsOfFile: seedFile("canopy-demo-summit.json"), encoding: .utf8).utf8))
        var tree: [UInt8] = []
        document.data.json(export: true).write(into: &tree)
        #expect(try cluster.request("PUT", "/.json?ns=\(ns)", body: String(decoding: tree, as: UTF8.self), via: 0).status == 200)
        let owner = try cluster.owner(of: ns)
        // The namespace's rules travel in the log with its data: the new owner enforces them.
        let rules = #"{"rules": {".read": "auth != null", "public": {".read": true}}}"#
        #expect(try cluster.request("PUT", "/.settings/rules.json?ns=\(ns)", body: rules, via: owner).status == 200)
        let published = try cluster.request("POST", "/.canopy/publish?ns=\(ns)", via: owner)
        #expect(published.status == 200, "publish: \(published.json?.serialized() ?? "")")
        let before = try cluster.request("GET", "/.json?ns=\(ns)", via: owner).json
        cluster.kill9(owner)
        // The new owner serves the whole publish: the same tree, to the byte, as the old owner answered.
        var after: JSONValue?
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let answer = try? cluster.request("GET", "/.json?ns=\(ns)", via: (owner + 1) % 3, timeout: 5),
                answer.status == 200
            {
                after = answer.json
                break
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(after != nil && after == before)
        let newOwner = try cluster.owner(of: ns, asking: (owner + 1) % 3)
        let savedRules = try cluster.request("GET", "/.settings/rules.json?ns=\(ns)", via: newOwner)
        #expect(savedRules.json == (try? JSONValue.parse(rules)), "rules on the new owner: \(savedRules.json?.serialized() ?? "")")
        let anonymous = HTTPClient(host: "127.0.0.1", port: cluster.ports[newOwner], timeoutSeconds: 10)
        defer { anonymous.close() }
        #expect(try anonymous.request("GET", "/private.json?ns=\(ns)").status == 401)
        #expect(try anonymous.request("GET", "/public.json?ns=\(ns)").status == 200)
        #expect(after?["private"]?["admin"]?["content"] == before?["private"]?["admin"]?["pendingContent"])
    }

    /// `--demo` on every node: the node that claims the demo event stores its rules in the log before its
    /// document, so a node that takes it over after `kill -9` enforces them with the data.
    @Test func theDemoEventsRulesAreInTheLogBeforeItsDocument() throws {
        let cluster = try CanopyCluster(extraArguments: ["--demo"])
        defer { cluster.stop() }
        let ns = "canopy-demo-summit"
        let rules = try String(contentsOfFile: rulesFile("personalized-content.rules.json"), encoding: .utf8)
        var loaded = false
        #expect(poll(timeout: 20) {
            loaded = (try? cluster.request("GET", "/private/admin/pendingContent.json?ns=\(ns)&shallow=true", via: 1))
                .map { $0.status == 200 && $0.json != nil && $0.json != .null } ?? false
            return loaded
        })
        guard loaded, let owner = cluster.claimant(of: ns) else { return }
        // The log in order: the claim's takeover marker, the rules once, then the document.
        let (connection, js) = try cluster.jetStream()
        defer { connection.close() }
        let (stream, subject) = ClusterNode.log(of: ns, streams: 8)
        var kinds: [String] = []
        var from: UInt64 = 1
        while let message = try js.firstMessage(stream: stream, subject: subject, from: from) {
            let json = try JSONValue.parse(message.payload)
            kinds.append(json["rules"] != nil ? "rules" : json["takeover"] != nil ? "takeover" : "ops")
            from = message.sequence + 1
        }
        #expect(kinds == ["takeover", "rules", "ops"], "the demo event's log: \(kinds)")
        let first = HTTPClient(host: "127.0.0.1", port: cluster.ports[owner], timeoutSeconds: 5)
        defer { first.close() }
        #expect(try first.request("GET", "/.settings/rules.json?ns=\(ns)", headers: cluster.adminHeader).text == rules)
        cluster.kill9(owner)
        let survivor = (owner + 1) % 3
        // The rules text exactly as stored, comments included, from the node that owns the event now.
        var after: HTTPClientResponse?
        #expect(poll(timeout: 30) {
            guard let newOwner = try? cluster.owner(of: ns, asking: survivor) else { return false }
            let client = HTTPClient(host: "127.0.0.1", port: cluster.ports[newOwner], timeoutSeconds: 5)
            defer { client.close() }
            after = try? client.request("GET", "/.settings/rules.json?ns=\(ns)", headers: cluster.adminHeader)
            return after?.status == 200
        })
        #expect(after?.text == rules, "rules on the new owner: \(after?.text ?? "")")
        let anonymous = HTTPClient(host: "127.0.0.1", port: cluster.ports[survivor], timeoutSeconds: 10)
        defer { anonymous.close() }
        #expect(try anonymous.request("GET", "/private/admin.json?ns=\(ns)").status == 401)
        let pending = try cluster.request("GET", "/private/admin/pendingContent.json?ns=\(ns)&shallow=true", via: survivor)
        #expect(pending.status == 200 && pending.json != .null)
    }
}

/// Polls a blocking `condition` for up to `timeout` seconds.
func poll(timeout: TimeInterval = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return condition()
}

extension JSONValue {
    /// The child with integer key `key`: from an array (keys 0…n read as one) or an object.
    fileprivate func member(_ key: Int) -> JSONValue? {
        if let array = arrayValue { return key < array.count ? array[key] : nil }
        return self["\(key)"]
    }

    /// The number of members of an object (or elements of an array), nil for other values.
    fileprivate var objectCount: Int? {
        if case .object(let members) = self { return members.count }
        return arrayValue?.count
    }
}

@Suite(.serialized, .enabled(if: NATSTestCluster.binary != nil, "nats-server is not installed"))
struct ClusterReplicaTests {
    /// A `--replicate` cluster whose namespace `ns` holds `agenda/talk = "opening"`; its owner and a replica node.
    private func replicatedAgenda(_ ns: String) throws -> (cluster: CanopyCluster, owner: Int, replica: Int) {
        let cluster = try CanopyCluster(replicate: true)
        #expect(try cluster.request("PUT", "/agenda.json?ns=\(ns)", body: #"{"talk":"opening"}"#, via: 0).status == 200)
        guard let owner = cluster.claimant(of: ns) else {
            cluster.stop()
            throw HTTPClientError("no node claimed \(ns)")
        }
        return (cluster, owner, (owner + 1) % 3)
    }

    /// A replica forwards its clients' writes on keep-alive connections to the owner (the proxy's pool): after
    /// the first, it opens no new connection however many writes follow, one after another or at once, unless a
    /// connection sat idle past the pool's idle timeout (15 s; only a starved test machine waits that long between
    /// two writes, and each such wait may then open one).
    @Test(.timeLimit(.minutes(2))) func aReplicasForwardedWritesShareConnectionsToTheOwner() async throws {
        let ns = "pooledwrites"
        let (cluster, owner, replicaNode) = try replicatedAgenda(ns)
        defer { cluster.stop() }
        let db = try clientDatabase(port: cluster.ports[replicaNode], namespace: ns, token: cluster.admin)
        try await db.ref("agenda/n").setValue(.int(0)).synced()  // opens the first forwarding connection
        var lastWrite = Date()
        #expect(cluster.log(replicaNode).contains("event=cluster.replica "))
        // Counted where they are opened: the owner's own count of accepted connections also has every other
        // client's (the third node's, the SDK's reconnects).
        let metrics = HTTPClient(host: "127.0.0.1", port: cluster.ports[replicaNode], timeoutSeconds: 10)
        defer { metrics.close() }
        func opened() throws -> Double {
            try #require(
                metricSample(
                    try metrics.request("GET", "/.canopy/metrics", headers: cluster.adminHeader).text,
                    "canopy_cluster_owner_connections_opened_total"))
        }
        let idleTimeout = Double(ProxyConnectionPool.defaultIdleTimeoutMilliseconds) / 1000
        var expired = 0.0  // waits past the idle timeout: each may have closed the pooled connection
        var gaps: [Int] = []
        func noteTheWait() {
            let gap = Date().timeIntervalSince(lastWrite)
            gaps.append(Int(gap * 1000))
            if gap > idleTimeout * 0.9 { expired += 1 }
        }
        func write(_ path: String, _ value: Int) async throws {
            noteTheWait()
            try await db.ref(path).setValue(.int(Int64(value))).synced()
            lastWrite = Date()
        }
        let before = try opened()
        for n in 1...20 { try await write("agenda/n", n) }
        #expect(try opened() - before <= expired, "sequential forwarded writes opened connections; gaps (ms): \(gaps)")
        // Eight at once: up to eight connections, each kept for the next writes.
        noteTheWait()
        let pending = (0..<8).map { db.ref("agenda/burst/\($0)").setValue(.int(Int64($0))) }
        for burstWrite in pending { try await burstWrite.synced() }
        lastWrite = Date()
        let afterBurst = try opened()
        #expect(afterBurst - before <= 8 + expired)
        let expiredBefore = expired
        for n in 21...30 { try await write("agenda/n", n) }
        #expect(try opened() - afterBurst <= expired - expiredBefore, "gaps (ms): \(gaps)")
        let stored = try cluster.request("GET", "/agenda.json?ns=\(ns)", via: owner).json
        #expect(stored?["n"] == 30 && stored?["burst"]?.objectCount ?? stored?["burst"]?.arrayValue?.count == 8)
        await db.close()
    }

    /// With `--replicate`, every node serves the namespace: listeners on all three, writes from a replica's client
    /// forwarded to the owner and acknowledged after the replica shows them, REST reads answered locally.
    @Test func listenersSpreadOverEveryNodeAndReplicaWritesComeBackBeforeTheirAck() async throws {
        let ns = "keynote"
        let (cluster, owner, replicaNode) = try replicatedAgenda(ns)
        defer { cluster.stop() }
        var databases: [Database] = []
        var recorders: [SnapshotRecorder] = []
        for index in 0..<3 {
            let db = try clientDatabase(port: cluster.ports[index], namespace: ns, token: cluster.admin)
            databases.append(db)
            recorders.append(SnapshotRecorder(db.ref("agenda/talk")))
        }
        for (index, recorder) in recorders.enumerated() {
            #expect(await eventually { recorder.last == "opening" }, "listener on c\(index + 1)")
        }
        // The listeners stayed on their nodes: the replicas served them, nobody was sent to the owner.
        for index in 0..<3 where index != owner {
            #expect(cluster.log(index).contains("event=cluster.replica "), "c\(index + 1) holds no replica")
        }
        // A write from a replica's client: forwarded, then applied here before its acknowledgement.
        try await databases[replicaNode].ref("agenda/talk").setValue("keynote").synced()
        #expect(recorders[replicaNode].last == "keynote")
        for (index, recorder) in recorders.enumerated() {
            #expect(await eventually { recorder.last == "keynote" }, "listener on c\(index + 1)")
        }
        // REST: a write at a replica is proxied to the owner, a read is answered by the replica.
        let client = HTTPClient(host: "127.0.0.1", port: cluster.ports[replicaNode], timeoutSeconds: 10)
        defer { client.close() }
        let put = try client.request(
            "PUT", "/agenda/room.json?ns=\(ns)", headers: cluster.adminHeader, body: Array("7".utf8))
        #expect(put.status == 200 && put.header("x-canopy-owner") == "http://127.0.0.1:\(cluster.ports[owner])")
        #expect(poll { (try? client.request("GET", "/agenda/room.json?ns=\(ns)", headers: cluster.adminHeader).text) == "7" })
        let read = try client.request("GET", "/agenda/room.json?ns=\(ns)", headers: cluster.adminHeader)
        #expect(read.header("x-canopy-owner") == nil)
        // The owner's rules reach the replicas through the log; an anonymous writer at a replica is judged by them.
        let rules = #"{"rules": {"agenda": {".read": true, ".write": "auth != null"}}}"#
        #expect(try client.request("PUT", "/.settings/rules.json?ns=\(ns)", headers: cluster.adminHeader, body: Array(rules.utf8)).status == 200)
        let anonymous = HTTPClient(host: "127.0.0.1", port: cluster.ports[replicaNode], timeoutSeconds: 10)
        defer { anonymous.close() }
        #expect(poll { (try? anonymous.request("GET", "/agenda/talk.json?ns=\(ns)").status) == 200 })
        let anonymousDB = try clientDatabase(port: cluster.ports[replicaNode], namespace: ns, token: nil)
        await #expect(throws: (any Error).self) { try await anonymousDB.ref("agenda/talk").setValue("vandal").synced() }
        #expect(recorders[owner].last == "keynote")
        await anonymousDB.close()

        // Transactions from clients of two replicas on one counter: the hash condition is forwarded, every
        // increment counts once.
        let clients = databases
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<3 where index != owner {
                group.addTask {
                    for _ in 0..<5 {
                        let result = try await clients[index].ref("agenda/count").runTransaction { current in
                            .success(.int((current.int64Value ?? 0) + 1))
                        }
                        #expect(result.committed)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try cluster.request("GET", "/agenda/count.json?ns=\(ns)", via: owner).json == 10)

        // The owner dies: a replica node claims the namespace, the other keeps replicating from the new owner,
        // and every listener left hears the next write.
        cluster.kill9(owner)
        let survivors = (0..<3).filter { $0 != owner }
        var written = false
        let deadline = Date().addingTimeInterval(30)
        while !written && Date() < deadline {
            written = (try? cluster.request("PUT", "/agenda/talk.json?ns=\(ns)", body: #""after failover""#, via: survivors[0], timeout: 5))?.status == 200
            if !written { try await Task.sleep(nanoseconds: 200_000_000) }
        }
        #expect(written)
        for index in survivors {
            let recorder = recorders[index]
            #expect(await eventually(timeout: 20) { recorder.last == "after failover" }, "listener on c\(index + 1)")
        }
        for db in databases { await db.close() }
    }

    /// A write made at a replica while the owner is dead is not failed (a Firebase SDK takes a failure as final
    /// and drops the write): the replica resets its sessions, and the client resends the write until the new
    /// owner takes it. Found with the Firebase JS SDK (Tests/interop/jssdk).
    @Test(.timeLimit(.minutes(2))) func aWriteAtAReplicaWhileTheOwnerIsDeadReachesTheNewOwner() async throws {
        let ns = "failover-at-replica"
        let (cluster, owner, replicaNode) = try replicatedAgenda(ns)
        defer { cluster.stop() }
        // The first request of a node that holds no replica yet opens one: it is answered under the log's rules
        // (it was refused, even to the admin, while the replica still had the deny-all policy it starts with).
        let fresh = try #require((0..<3).first { $0 != owner && $0 != 0 })
        let first = try cluster.request("GET", "/agenda/talk.json?ns=\(ns)", via: fresh)
        #expect(first.status == 200 && first.json == "opening")
        let db = try clientDatabase(port: cluster.ports[replicaNode], namespace: ns, token: cluster.admin)
        let recorder = SnapshotRecorder(db.ref("agenda/talk"))
        #expect(await eventually { recorder.last == "opening" })
        #expect(cluster.log(replicaNode).contains("event=cluster.replica "))
        cluster.kill9(owner)
        // At once: the owner's lease is still there, so the forwarded write meets a dead node.
        try await db.ref("agenda/talk").setValue("during failover").synced()
        #expect(recorder.last == "during failover")
        #expect(cluster.log(replicaNode).contains("event=cluster.replica_dropped"))
        for index in 0..<3 where index != owner {  // the other replica follows the new owner's log
            #expect(poll(timeout: 20) {
                (try? cluster.request("GET", "/agenda/talk.json?ns=\(ns)", via: index, timeout: 5))?.json
                    == "during failover"
            }, "c\(index + 1)")
        }
        await db.close()
    }
}
