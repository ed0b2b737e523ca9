// JetStreamClusterTests -- streams, fencing, reads and key-value buckets on a real 3-node JetStream cluster.

import CanopyTestSupport
import Foundation
import Testing

@testable import CanopyNATS

/// Retries `body` until the cluster can answer it (a new cluster elects its meta leader, a stream its leader,
/// within seconds): JetStream's "not available" errors, timeouts and lost connections are retried for `within`.
func untilAvailable<T>(within: Duration = .seconds(20), _ body: () throws -> T) throws -> T {
    let deadline = Date().addingTimeInterval(within.seconds)
    while true {
        do {
            return try body()
        } catch let error as JetStreamError where error.isWrongLastSequence || Date() >= deadline {
            throw error
        } catch let error as JetStreamError where error.status == 503 || error.status == 500 || error.errorCode == 10008 {
            Thread.sleep(forTimeInterval: 0.1)
        } catch let error as NATSError where Date() < deadline {
            switch error {
            case .timeout, .noResponders, .notConnected: Thread.sleep(forTimeInterval: 0.1)
            default: throw error
            }
        } catch let error as JetStreamError where Date() < deadline && [10074, 10005].contains(error.errorCode) {
            // "insufficient resources" or "no suitable peers for placement": not all peers known yet
            Thread.sleep(forTimeInterval: 0.1)
        }
    }
}

func ns(_ name: String) -> String { "canopy.ns." + name }

@Suite(.timeLimit(.minutes(1))) struct JetStreamClusterTests {
    @Test func anR3StreamFencesStalePublishersAndReadsBackInOrder() throws {
        let cluster = try startCluster(count: 3)
        let connection = try connect(cluster)
        defer { connection.close() }
        let js = JetStream(connection, timeout: .seconds(2))
        var config = JetStreamStreamConfig(name: "CANOPY_LOG", subjects: ["canopy.ns.>"], replicas: 3)
        config.allowDirect = true
        let info = try untilAvailable { try js.createStream(config) }
        #expect(info.replicas == 3)
        let withLeader = try untilAvailable { () throws -> JetStreamStreamInfo in
            let current = try js.streamInfo("CANOPY_LOG")
            guard current.leader != nil else { throw NATSError.timeout(subject: "leader") }
            return current
        }
        #expect(withLeader.followers.count == 2)

        // The owner of "chat" appends batch 1 with no predecessor, then batch 2 naming batch 1's sequence.
        let first = try untilAvailable {
            try js.publish(ns("chat"), payload: Array("batch-1".utf8),
                options: .init(messageID: "chat-1", expectedLastSubjectSequence: 0))
        }
        #expect(first.stream == "CANOPY_LOG" && first.sequence == 1 && !first.duplicate)
        let retry = try js.publish(ns("chat"), payload: Array("batch-1".utf8), options: .init(messageID: "chat-1"))
        #expect(retry.sequence == 1 && retry.duplicate)
        let other = try js.publish(ns("quiz"), payload: Array("q-1".utf8), options: .init(expectedLastSubjectSequence: 0))
        #expect(other.sequence == 2)
        let second = try js.publish(
            ns("chat"), payload: Array("batch-2".utf8), options: .init(expectedLastSubjectSequence: first.sequence))
        #expect(second.sequence == 3)

        // A deposed owner still believes batch 1 is the last: refused, and nothing is stored.
        let stale = #expect(throws: JetStreamError.self) {
            try js.publish(ns("chat"), payload: Array("stale".utf8), options: .init(expectedLastSubjectSequence: 1))
        }
        #expect(stale?.errorCode == JetStreamError.wrongLastSequence && stale?.status == 400)
        let staleStream = #expect(throws: JetStreamError.self) {
            try js.publish(ns("chat"), payload: Array("stale".utf8), options: .init(expectedLastSequence: 2))
        }
        #expect(staleStream?.isWrongLastSequence == true)
        #expect(try js.streamInfo("CANOPY_LOG").lastSequence == 3)
        let last = try js.publish(ns("chat"), payload: Array("batch-3".utf8), options: .init(expectedLastSequence: 3))
        #expect(last.sequence == 4)

        // Reads: by sequence and newest-by-subject, from the leader and from any replica.
        #expect(try js.message(stream: "CANOPY_LOG", sequence: 2).map { String(decoding: $0.payload, as: UTF8.self) } == "q-1")
        #expect(try js.message(stream: "CANOPY_LOG", sequence: 99) == nil)
        let newest = try #require(try js.lastMessage(stream: "CANOPY_LOG", subject: ns("chat")))
        #expect(newest.sequence == 4 && newest.headers?["Nats-Expected-Last-Sequence"] == "3")
        let direct = try #require(try untilAvailable { try js.directGet(stream: "CANOPY_LOG", lastBySubject: ns("quiz")) })
        #expect(direct.sequence == 2 && String(decoding: direct.payload, as: UTF8.self) == "q-1")
        #expect(try js.directGet(stream: "CANOPY_LOG", lastBySubject: ns("none")) == nil)

        // A replica catching up reads one namespace's batches from a sequence, then follows new ones.
        let reader = try JetStreamOrderedConsumer(
            js, stream: "CANOPY_LOG", filterSubject: ns("chat"), start: .sequence(3))
        defer { reader.stop() }
        let caughtUp = [reader.next(timeout: .seconds(5)), reader.next(timeout: .seconds(5))]
        #expect(caughtUp.map { $0?.streamSequence } == [3, 4])
        #expect(caughtUp.map { $0.map { String(decoding: $0.payload, as: UTF8.self) } } == ["batch-2", "batch-3"])
        #expect(caughtUp.last??.pending == 0)
        _ = try js.publish(ns("quiz"), payload: Array("q-2".utf8))
        _ = try js.publish(ns("chat"), payload: Array("batch-4".utf8), options: .init(expectedLastSubjectSequence: 4))
        let live = try #require(reader.next(timeout: .seconds(5)))
        #expect(live.streamSequence == 6 && live.subject == ns("chat"))
        #expect(reader.next(timeout: .milliseconds(200)) == nil)

        try js.deleteStream("CANOPY_LOG")
        let gone = #expect(throws: JetStreamError.self) { try js.streamInfo("CANOPY_LOG") }
        #expect(gone?.errorCode == JetStreamError.streamNotFound)
    }

    @Test func keyValueLeasesHaveOneOwnerAndRevisionCheckedRenewals() throws {
        let cluster = try startCluster(count: 3)
        let nodeA = try connect(cluster, nodes: [0])
        let nodeB = try connect(cluster, nodes: [1])
        defer {
            nodeA.close()
            nodeB.close()
        }
        let leasesA = try untilAvailable {
            try KeyValue.create(JetStream(nodeA, timeout: .seconds(2)), bucket: "canopy_owners", replicas: 3)
        }
        let leasesB = try KeyValue.bind(JetStream(nodeB, timeout: .seconds(2)), bucket: "canopy_owners")
        let watcher = try leasesB.watch("ns.>")
        defer { watcher.stop() }

        let taken = try untilAvailable { try leasesA.create("ns.chat", Array("node-a".utf8)) }
        #expect(throws: KeyValueError.keyExists(key: "ns.chat")) { try leasesB.create("ns.chat", Array("node-b".utf8)) }
        let entry = try #require(try leasesB.entry("ns.chat"))
        #expect(entry.revision == taken && entry.value == Array("node-a".utf8) && entry.operation == .put)

        // Renewal names the revision it holds; a node holding an older one is refused.
        let renewed = try leasesA.update("ns.chat", Array("node-a".utf8), revision: taken)
        #expect(renewed > taken)
        #expect(throws: KeyValueError.wrongRevision(key: "ns.chat", expected: taken)) {
            try leasesB.update("ns.chat", Array("node-b".utf8), revision: taken)
        }
        #expect(try leasesA.get("ns.chat") == Array("node-a".utf8))

        // Released (deleted at its revision): another node may create it.
        try leasesA.delete("ns.chat", revision: renewed)
        #expect(try leasesA.get("ns.chat") == nil)
        #expect(try leasesA.entry("ns.chat", includeDeleted: true)?.operation == .delete)
        let takenByB = try leasesB.create("ns.chat", Array("node-b".utf8))
        #expect(try leasesA.get("ns.chat") == Array("node-b".utf8))
        #expect(throws: KeyValueError.self) { try leasesA.put("bad key", []) }

        var seen: [(String, KeyValueEntry.Operation, UInt64)] = []
        while let next = watcher.next(timeout: .milliseconds(500)) {
            seen.append((String(decoding: next.value, as: UTF8.self), next.operation, next.revision))
            if next.revision == takenByB { break }
        }
        #expect(seen.map(\.0) == ["node-a", "node-a", "", "node-b"])
        #expect(seen.map(\.1) == [.put, .put, .delete, .put])

        // Listing by wildcard: the stored values only, deleted and purged keys left out.
        let pending = try KeyValue.create(JetStream(nodeA, timeout: .seconds(2)), bucket: "canopy_listing", replicas: 3)
        _ = try untilAvailable { try pending.put("quiz.c1-x.s1", Array("a".utf8)) }
        _ = try pending.put("quiz.c2-y.s2", Array("b".utf8))
        _ = try pending.put("chat.c1-x.s3", Array("c".utf8))
        _ = try pending.put("quiz.c1-x.s1", Array("a2".utf8))
        _ = try pending.put("quiz.c1-x.s4", Array("d".utf8))
        try pending.purge("quiz.c1-x.s4")
        _ = try pending.put("quiz.c2-y.s5", Array("e".utf8))
        try pending.delete("quiz.c2-y.s5")
        #expect(try pending.entries("quiz.>").map(\.key) == ["quiz.c2-y.s2", "quiz.c1-x.s1"])
        #expect(try pending.entries("*.c1-x.*").map { String(decoding: $0.value, as: UTF8.self) } == ["c", "a2"])
        #expect(try pending.entries("nothing.>").isEmpty)

        // With a TTL, a lease nobody renews disappears and the next node's create succeeds.
        let expiring = try KeyValue.create(
            JetStream(nodeA, timeout: .seconds(2)), bucket: "canopy_leases", ttl: .seconds(3), replicas: 3)
        let expiringB = try KeyValue.bind(JetStream(nodeB, timeout: .seconds(2)), bucket: "canopy_leases")
        _ = try untilAvailable { try expiring.create("ns.quiz", Array("node-a".utf8)) }
        #expect(throws: KeyValueError.keyExists(key: "ns.quiz")) { try expiringB.create("ns.quiz", Array("node-b".utf8)) }
        let deadline = Date().addingTimeInterval(10)
        var takenOver: UInt64?
        while takenOver == nil && Date() < deadline {
            takenOver = try? expiringB.create("ns.quiz", Array("node-b".utf8))
            if takenOver == nil { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(takenOver != nil)
        #expect(try expiring.get("ns.quiz") == Array("node-b".utf8))
    }
}
