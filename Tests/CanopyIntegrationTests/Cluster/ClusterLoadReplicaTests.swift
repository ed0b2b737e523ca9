// ClusterLoadReplicaTests -- replicas by load (`--replicate-above`, Cluster.md#How-a-client-reaches-its-node): a
// node that does not own a namespace sends its clients to the owner while the namespace is quiet, and serves them
// from a replica once the cluster holds more clients of it than the threshold. And the onDisconnect operations of
// a replica's sessions, performed by the owner when the replica's process dies (Cluster.md#Writes-at-a-replica).

import CanopyClient
import CanopyCore
import CanopyNATS
import CanopyNet
import CanopyTestSupport
import Foundation
import Testing

@Suite(.serialized, .enabled(if: NATSTestCluster.binary != nil, "nats-server is not installed"))
struct ClusterLoadReplicaTests {
    /// `--replicate-above 2`, nodes left at their default: a quiet namespace's clients go to its owner; a busy
    /// one's are served by the node they reached; an idle replica closes; a namespace that is quiet again has
    /// its clients sent to the owner once more.
    @Test(.timeLimit(.minutes(2))) func aNonOwnerReplicatesANamespaceOnlyOnceItIsBusy() async throws {
        let ns = "busy"
        let cluster = try CanopyCluster(extraArguments: ["--replicate-above", "2", "--namespace-idle", "2"])
        defer { cluster.stop() }
        #expect(try cluster.request("PUT", "/agenda.json?ns=\(ns)", body: #"{"talk":"opening"}"#, via: 0).status == 200)
        let owner = try #require(cluster.claimant(of: ns))
        let other = (owner + 1) % 3
        let reset = #"{"t":"c","d":{"t":"r","d":"127.0.0.1:\#(cluster.ports[owner])"}}"#
        /// The first control message a new session at node `index` gets: a handshake (`h`) or a reset.
        func greeting(at index: Int) -> JSONValue? {
            guard let wire = try? WireTestClient(port: cluster.ports[index], namespace: ns) else { return nil }
            defer { wire.close() }
            return wire.waitFor { $0["t"] == "c" }
        }
        func sessionAtOwner() throws -> WireTestClient {
            let wire = try WireTestClient(port: cluster.ports[owner], namespace: ns)
            #expect(wire.waitFor { $0["t"] == "c" }?["d"]?["t"] == "h")
            return wire
        }

        // One client (at or below the threshold): the other node sends the next client to the owner.
        let keeper = try sessionAtOwner()
        defer { keeper.close() }
        try await Task.sleep(nanoseconds: 3_000_000_000)  // a load report, a lease renewal and a poll
        #expect(greeting(at: other)?.serialized() == reset)

        // Three: the other node serves the next client itself, from a replica fed by the log.
        let crowd = try (0..<2).map { _ in try sessionAtOwner() }
        var served = false
        let deadline = Date().addingTimeInterval(20)
        while !served && Date() < deadline {
            served = greeting(at: other)?["d"]?["t"] == "h"
            if !served { try await Task.sleep(nanoseconds: 250_000_000) }
        }
        #expect(served, "c\(other + 1) kept sending the clients of a busy namespace to the owner")
        #expect(cluster.log(other).contains("event=cluster.replica "))
        let db = try clientDatabase(port: cluster.ports[other], namespace: ns, token: cluster.admin)
        let recorder = SnapshotRecorder(db.ref("agenda/talk"))
        #expect(await eventually { recorder.last == "opening" })
        #expect(try cluster.request("PUT", "/agenda/talk.json?ns=\(ns)", body: #""keynote""#, via: owner).status == 200)
        #expect(await eventually { recorder.last == "keynote" })
        // Served where it connected: a session at a replica is not reset.
        #expect(!cluster.log(other).contains("event=cluster.replica_dropped"))
        await db.close()

        // Its last client gone, the replica closes once idle.
        #expect(poll(timeout: 15) { cluster.log(other).contains("event=cluster.replica_closed") })

        // The crowd leaves (the keeper stays, so the owner keeps the namespace): clients go to the owner again.
        // Probes are spaced beyond the idle time, or each would keep a replica of its own open.
        for wire in crowd { wire.close() }
        var quiet = false
        for _ in 0..<5 where !quiet {
            try await Task.sleep(nanoseconds: 3_500_000_000)
            quiet = greeting(at: other)?.serialized() == reset
        }
        #expect(quiet, "c\(other + 1) still replicates a namespace with one client")
    }

    /// onDisconnect operations queued at a replica: stored in NATS before they are acknowledged, performed by the
    /// replica (and forgotten) when its session ends, and by the owner when the replica's process is killed; a
    /// cancelled one is performed by neither.
    @Test(.timeLimit(.minutes(2))) func theOwnerPerformsTheOnDisconnectOperationsOfADeadReplica() async throws {
        let ns = "presence"
        let cluster = try CanopyCluster(replicate: true)
        defer { cluster.stop() }
        let start = #"{"alice":"away","bob":"away","carol":"away"}"#
        #expect(try cluster.request("PUT", "/people.json?ns=\(ns)", body: start, via: 0).status == 200)
        let owner = try #require(cluster.claimant(of: ns))
        let doomed = (owner + 1) % 3
        let survivor = (owner + 2) % 3
        let (connection, js) = try cluster.jetStream()
        defer { connection.close() }
        let bucket = try KeyValue.bind(js, bucket: "canopy_ondisconnect")
        func stored() -> [KeyValueEntry]? { try? bucket.entries(ns + ".>") }
        func people() -> JSONValue? { try? cluster.request("GET", "/people.json?ns=\(ns)", via: owner).json }

        // A session at a replica that ends: the replica performs its operation and removes the stored copy.
        let leaving = try clientDatabase(port: cluster.ports[survivor], namespace: ns, token: cluster.admin)
        try await leaving.ref("people/carol").setValue("here").synced()
        try await leaving.ref("people/carol").onDisconnect().setValue("gone")
        #expect(stored()?.count == 1)
        await leaving.close()
        #expect(poll(timeout: 10) { people()?["carol"] == "gone" })
        #expect(poll(timeout: 10) { stored()?.isEmpty == true })

        // A session at a replica whose process is killed.
        let db = try clientDatabase(port: cluster.ports[doomed], namespace: ns, token: cluster.admin)
        try await db.ref("people/alice").setValue("online").synced()
        try await db.ref("people/bob").setValue("online").synced()
        try await db.ref("people/alice").onDisconnect().setValue("offline")
        try await db.ref("people/bob").onDisconnect().setValue("offline")
        try await db.ref("people/bob").onDisconnect().cancel()
        #expect(cluster.log(doomed).contains("event=cluster.replica "), "c\(doomed + 1) served the session itself")
        // Acknowledged means stored: one key for the session, under the replica's incarnation, alice's only.
        let keys = try #require(stored())
        #expect(keys.count == 1 && keys.first?.key.hasPrefix("\(ns).c\(doomed + 1)-") == true, "\(keys.map(\.key))")
        let operations = try keys.first.map { try JSONValue.parse($0.value) }
        #expect(operations?.arrayValue?.count == 1 && operations?[0]?["p"] == "/people/alice")
        cluster.kill9(doomed)
        // The owner notices the lease gone (3 s here, and a poll) and performs it as the session's identity.
        #expect(poll(timeout: 20) { people()?["alice"] == "offline" }, "\(people()?.serialized() ?? "")")
        #expect(people()?["bob"] == "online")
        #expect(poll(timeout: 10) { stored()?.isEmpty == true })
        #expect(cluster.log(owner).contains("event=cluster.ondisconnect_orphaned"))
        await db.close()
    }
}
