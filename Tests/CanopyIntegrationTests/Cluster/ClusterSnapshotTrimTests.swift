// ClusterSnapshotTrimTests -- snapshots and log trimming against real processes (Cluster.md#Snapshots): three
// nats-server and three `canopy serve --cluster --replicate --snapshot-batches 10`. Writes are snapshotted and
// the log trimmed (seen through the JetStream API); a node started after the trim replicates the namespace
// with every value and follows it live; the owner is killed with `kill -9` and the new owner has every
// acknowledged write, one namespace loaded from its snapshot, another from an older one because its newest
// snapshots were made partial and corrupt; a third, whose snapshots were all removed, refuses service.

import CanopyClient
import CanopyCore
import CanopyNATS
import CanopyNet
import CanopyTestSupport
import Foundation
import Testing

@testable import CanopyServer

@Suite(.serialized, .enabled(if: NATSTestCluster.binary != nil, "nats-server is not installed"))
struct ClusterSnapshotTrimTests {
    @Test(.timeLimit(.minutes(3)))
    func aTrimmedLogLosesNoWriteToALateReplicaOrAClaimAfterKill9() async throws {
        let cluster = try CanopyCluster(
            replicate: true, started: 2, extraArguments: ["--snapshot-batches", "10"])
        defer { cluster.stop() }
        let trimmed = "trimmed"
        // A second namespace owned by the same node (so one kill orphans both), on another log stream (so the
        // first one's stream starts with its own messages).
        let owner0 = ClusterNode.preferredOwner(of: trimmed, among: ["c1", "c2"])
        let skipped = try #require(
            (1...200).map { "skipped\($0)" }.first {
                ClusterNode.preferredOwner(of: $0, among: ["c1", "c2"]) == owner0
                    && ClusterNode.log(of: $0, streams: 8).stream != ClusterNode.log(of: trimmed, streams: 8).stream
            })
        // A third one whose every snapshot is then removed while its log is trimmed: it must refuse service.
        let lost = try #require(
            (1...200).map { "lost\($0)" }.first { ClusterNode.preferredOwner(of: $0, among: ["c1", "c2"]) == owner0 })
        let (connection, js) = try cluster.jetStream()
        defer { connection.close() }

        // Each PUT is one batch, one log message: 45 of them make four snapshots and trim the log twice.
        var acknowledged: [String: [Int]] = [trimmed: [], skipped: []]
        for (ns, count) in [(trimmed, 45), (skipped, 25), (lost, 25)] {
            for item in 0..<count {
                let put = try cluster.request("PUT", "/items/i\(item).json?ns=\(ns)", body: "\(item)", via: item % 2)
                #expect(put.status == 200, "PUT \(ns) \(item): \(put.status)")
                if put.status == 200 { acknowledged[ns]?.append(item) }
            }
        }
        let owner = try #require(cluster.claimant(of: trimmed))
        #expect(cluster.claimant(of: skipped) == owner && cluster.claimant(of: lost) == owner)

        // The log was trimmed: its first message is no longer the first one written, and the stream's first
        // sequence moved with it.
        let (stream, subject) = ClusterNode.log(of: trimmed, streams: 8)
        #expect(
            poll(timeout: 15) { (try? js.firstMessage(stream: stream, subject: subject)?.sequence).flatMap { $0 } ?? 0 > 11 },
            "the log of \(trimmed) was not trimmed")
        let info = try js.streamInfo(stream)
        #expect(info.firstSequence > 11 && info.lastSequence >= 46, "\(info.firstSequence)…\(info.lastSequence)")
        #expect(cluster.log(owner).contains("event=cluster.log_trimmed"))
        // The other namespace: two snapshots kept (the newest and the one before, its fallback).
        #expect(poll(timeout: 15) { (try? manifests(js, skipped).count) == 2 }, "\((try? manifests(js, skipped)) ?? [])")

        // A node started after the trim replicates `trimmed` from its snapshot: every value, then live updates.
        try cluster.start(2)
        let db = try clientDatabase(port: cluster.ports[2], namespace: trimmed, token: cluster.admin)
        let recorder = SnapshotRecorder(db.ref("items"))
        #expect(await eventually(timeout: 20) { recorder.last == Self.items(0..<45) }, "\(recorder.last?.serialized() ?? "nil")")
        let atReplica = try cluster.request("GET", "/items.json?ns=\(trimmed)", via: 2)
        #expect(atReplica.node == 2 && atReplica.json == Self.items(0..<45))
        #expect(try cluster.request("PUT", "/items/i45.json?ns=\(trimmed)", body: "45", via: owner).status == 200)
        acknowledged[trimmed]?.append(45)
        #expect(await eventually { recorder.last == Self.items(0..<46) })
        #expect(cluster.log(2).contains("event=cluster.snapshot_loaded"))
        #expect(!cluster.log(2).contains("event=cluster.replica_dropped"))

        // `skipped`'s newest snapshot loses its chunk (as if partly purged), and a newer manifest naming the older
        // snapshot's chunks with another hash is added: a claim must skip both and start from the older one.
        let found = try manifests(js, skipped)
        let newest = try #require(found.last)
        for sequence in newest.first...newest.last { try js.deleteMessage(stream: ClusterNode.snapshotStream, sequence: sequence) }
        var forged = found[0]
        forged.sha256 = String(repeating: "0", count: 64)
        _ = try js.publish(ClusterNode.snapshotSubjects(of: skipped).manifest, payload: forged.encode())

        #expect(poll(timeout: 15) { (try? manifests(js, lost).count) == 2 })
        #expect(poll(timeout: 15) { (try? js.firstMessage(stream: ClusterNode.log(of: lost, streams: 8).stream,
            subject: ClusterNode.log(of: lost, streams: 8).subject)?.sequence).flatMap { $0 } ?? 0 > 2 })
        try js.purge(stream: ClusterNode.snapshotStream, filter: ClusterNode.snapshotSubjects(of: lost).chunks)

        cluster.kill9(owner)
        let killed = Date()
        var accepted = false
        while Date().timeIntervalSince(killed) < 30 && !accepted {
            let via = owner == 0 ? 1 : 0
            accepted = (try? cluster.request("PUT", "/items/i46.json?ns=\(trimmed)", body: "46", via: via, timeout: 5))?.status == 200
            if !accepted { try await Task.sleep(nanoseconds: 200_000_000) }
        }
        #expect(accepted, "no new owner of \(trimmed) within 30 s")
        if accepted { acknowledged[trimmed]?.append(46) }
        let survivor = owner == 0 ? 1 : 0
        for (ns, items) in acknowledged {
            let stored = try cluster.request("GET", "/items.json?ns=\(ns)", via: survivor, timeout: 20)
            #expect(stored.status == 200 && stored.json == Self.items(items), "\(ns): \(stored.json?.serialized() ?? "")")
        }
        // The log of `lost` begins after messages that no readable snapshot holds: refused, never served short.
        let refused = try cluster.request("GET", "/items.json?ns=\(lost)", via: survivor, timeout: 20)
        #expect(refused.status == 503, "\(refused.status) \(refused.json?.serialized() ?? "")")
        #expect(refused.json?["error"]?.stringValue?.contains("trimmed") == true, "\(refused.json?.serialized() ?? "")")
        let newOwner = try #require(
            pollValue {
                cluster.nodes.indices.first { index in
                    index != owner
                        && cluster.log(index).split(separator: "\n").contains {
                            $0.contains("event=cluster.claimed") && $0.contains(" ns=\(skipped) ")
                        }
                }
            }, "nobody claimed \(skipped)")
        let log = cluster.log(newOwner).split(separator: "\n").filter {
            $0.contains(" ns=\(skipped) ") || $0.hasSuffix(" ns=\(skipped)")
        }
        #expect(log.contains { $0.contains("event=cluster.snapshot_skipped") && $0.contains("SHA-256") }, "\(log)")
        #expect(log.contains { $0.contains("event=cluster.snapshot_skipped") && $0.contains("0 of its 1 chunks") }, "\(log)")
        #expect(log.contains { $0.contains("event=cluster.snapshot_loaded") && $0.contains("log_seq=\(found[0].sequence) ") }, "\(log)")
        await db.close()
    }

    /// `{"i0":0,"i1":1,…}` for the items written.
    static func items(_ items: some Sequence<Int>) -> JSONValue {
        .object(items.map { JSONMember("i\($0)", .int(Int64($0))) }.sorted { $0.key < $1.key })
    }
}

/// The snapshot manifests of `ns` in the stream, oldest first.
private func manifests(_ js: JetStream, _ ns: String) throws -> [SnapshotManifest] {
    var found: [SnapshotManifest] = []
    var from: UInt64 = 1
    let subject = ClusterNode.snapshotSubjects(of: ns).manifest
    while let message = try js.firstMessage(stream: ClusterNode.snapshotStream, subject: subject, from: from) {
        found.append(try SnapshotManifest.decode(message.payload, streamSequence: message.sequence))
        from = message.sequence + 1
    }
    return found
}

private func pollValue<T>(timeout: TimeInterval = 15, _ value: () -> T?) -> T? {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let found = value() { return found }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return value()
}
