// ClusterLargeBatchTests -- batches larger than one NATS message (Cluster.md#Large-batches), against real
// processes: three nats-server with `max_payload: 64KB` and three `canopy serve --cluster --replicate`. A 300 KB
// write is stored as parts, acknowledged, and seen whole (never a part of it) by a listener on a replica; the
// owner is stopped, two parts of a batch that is never completed are appended in its name, and it is killed
// with `kill -9`: the new owner and the replica drop those parts and hold every acknowledged write; a large
// write through the new owner is stored in parts again.

import CanopyClient
import CanopyCore
import CanopyNATS
import CanopyNet
import CanopyTestSupport
import Foundation
import Testing

@testable import CanopyServer

@Suite(.serialized, .enabled(if: NATSTestCluster.binary != nil, "nats-server is not installed"))
struct ClusterLargeBatchTests {
    /// An object of `count` children of 1,000 characters each: about `count` KB of JSON.
    static func large(_ count: Int, tag: String) -> JSONValue {
        .object((0..<count).map { JSONMember("k\($0)", .string(tag + String(repeating: "x", count: 1000))) })
    }

    @Test(.timeLimit(.minutes(3)))
    func aBatchAboveMaxPayloadIsStoredInPartsAndAppliesWhole() async throws {
        let cluster = try CanopyCluster(replicate: true, maxPayload: "64KB")
        defer { cluster.stop() }
        let ns = "large"
        #expect(try cluster.request("PUT", "/small.json?ns=\(ns)", body: "1", via: 0).status == 200)
        let owner = try #require(cluster.claimant(of: ns))
        let replica = (owner + 1) % 3
        let db = try clientDatabase(port: cluster.ports[replica], namespace: ns, token: cluster.admin)
        let recorder = SnapshotRecorder(db.ref("big"))
        #expect(await eventually { recorder.last == .null })

        let big = Self.large(300, tag: "a")
        var text: [UInt8] = []
        big.write(into: &text)
        let put = try cluster.request("PUT", "/big.json?ns=\(ns)", body: String(decoding: text, as: UTF8.self), via: owner)
        #expect(put.status == 200, "\(put)")
        #expect(await eventually(timeout: 15) { recorder.last == big })
        // Never a part of the batch: the listener saw nothing, then the whole value.
        #expect(recorder.values.allSatisfy { $0 == .null || $0 == big }, "\(recorder.values.count) values")

        // In the log as parts: the last message is the last of five or more.
        let (connection, js) = try cluster.jetStream()
        defer { connection.close() }
        let (stream, subject) = ClusterNode.log(of: ns, streams: 8)
        let last = try #require(try js.lastMessage(stream: stream, subject: subject))
        let label = try #require(last.headers?[BatchParts.partHeader])
        let (index, count) = try #require(BatchParts.parse(label))
        #expect(count >= 5 && index == count - 1, "\(label)")
        #expect(try cluster.request("GET", "/big.json?ns=\(ns)", via: replica).json == big)
        #expect(try cluster.request("PUT", "/small.json?ns=\(ns)", body: "2", via: replica).status == 200)

        // The owner stops; two of three parts of a batch are appended in its place (as an owner that died between
        // two parts would leave them), fenced like its own appends; then it is killed.
        cluster.signal(owner, SIGSTOP)
        var sequence = try #require(try js.lastMessage(stream: stream, subject: subject)).sequence
        let ghost = Array(#"{"v":1,"ops":[{"w":[[["ghost"],"boo"]],"m":null}]}"#.utf8)
        let pieces = BatchParts.split(ghost, limit: ghost.count / 3 + 1)
        #expect(pieces.count == 3)
        for part in 0..<2 {
            var headers = NATSHeaders()
            headers.set(BatchParts.partHeader, BatchParts.label(part, of: 3))
            headers.set(BatchParts.batchHeader, "ghost")
            sequence = try js.publish(
                subject, payload: pieces[part],
                options: JetStreamPublishOptions(
                    messageID: "ghost.\(part)", expectedLastSubjectSequence: sequence, expectedStream: stream,
                    headers: headers)
            ).sequence
        }
        cluster.kill9(owner)

        // A new owner (the replica's node or the third) claims: every acknowledged write, no ghost.
        let other = (owner + 2) % 3
        #expect(
            await eventually(timeout: 20) {
                (try? cluster.request("PUT", "/after.json?ns=\(ns)", body: "3", via: other).status) == 200
            })
        for via in [replica, other] {
            let tree = try cluster.request("GET", "/.json?ns=\(ns)", via: via).json
            #expect(tree?["big"] == big && tree?["small"] == .int(2) && tree?["after"] == .int(3), "via \(via)")
            #expect(tree?["ghost"] == nil, "via \(via)")
        }
        #expect(cluster.log(replica).contains("event=cluster.parts_dropped") || cluster.log(other).contains("event=cluster.parts_dropped"))

        // The new owner stores a large batch in parts again; the replica's listener sees it whole.
        let bigger = Self.large(200, tag: "b")
        text = []
        bigger.write(into: &text)
        let second = try cluster.request(
            "PUT", "/big.json?ns=\(ns)", body: String(decoding: text, as: UTF8.self), via: other)
        #expect(second.status == 200, "\(second)")
        #expect(await eventually(timeout: 15) { recorder.last == bigger })
        #expect(recorder.values.allSatisfy { $0 == .null || $0 == big || $0 == bigger })
        let tail = try #require(try js.lastMessage(stream: stream, subject: subject))
        #expect(tail.headers?[BatchParts.partHeader] != nil)
    }
}

/// The part format and the joining rules, without NATS.
@Suite struct BatchPartsTests {
    static func headers(_ part: Int, of count: Int, batch: String) -> NATSHeaders {
        var headers = NATSHeaders()
        headers.set(BatchParts.partHeader, BatchParts.label(part, of: count))
        headers.set(BatchParts.batchHeader, batch)
        return headers
    }

    static let whole = Array(#"{"v":1,"ops":[{"w":[[["a"],1]],"m":null}]}"#.utf8)

    static func writes(_ batch: ClusterBatch) -> [String] {
        guard case .operations(let operations) = batch else { return ["not operations"] }
        return operations.flatMap { $0.writes.map { "\($0.path)=\($0.node.json(export: true))" } }
    }

    @Test func splitCutsAtTheLimitAndKeepsEveryByte() {
        let bytes = (0..<1000).map { UInt8($0 % 251) }
        for limit in [1, 7, 333, 999, 1000, 5000] {
            let parts = BatchParts.split(bytes, limit: limit)
            #expect(parts.allSatisfy { $0.count <= limit && !$0.isEmpty })
            #expect(Array(parts.joined()) == bytes)
            #expect(parts.count == (bytes.count + limit - 1) / limit)
        }
        #expect(BatchParts.parse("2/3")! == (2, 3))
        for bad in ["3/3", "-1/3", "0/1", "1/", "/2", "a/b", "1/2/3", ""] { #expect(BatchParts.parse(bad) == nil, "\(bad)") }
    }

    @Test func partsJoinIntoOneBatchAtTheLastPart() throws {
        var assembler = BatchAssembler()
        let pieces = BatchParts.split(Self.whole, limit: 10)
        for (index, piece) in pieces.enumerated() {
            let batch = try assembler.take(
                headers: Self.headers(index, of: pieces.count, batch: "b1"), payload: Array(piece))
            #expect(Self.writes(batch) == (index == pieces.count - 1 ? ["/a=1"] : []))
        }
        #expect(assembler.droppedParts == 0)
        #expect(Self.writes(try assembler.take(headers: nil, payload: Self.whole)) == ["/a=1"])
    }

    @Test func partsOfABatchNeverCompletedAreDropped() throws {
        let ghost = BatchParts.split(Array(#"{"v":1,"ops":[{"w":[[["ghost"],1]],"m":null}]}"#.utf8), limit: 10)
        var assembler = BatchAssembler()
        // Two parts, then a whole message: the parts are dropped, the message applies.
        for index in 0..<2 {
            #expect(Self.writes(try assembler.take(headers: Self.headers(index, of: ghost.count, batch: "g"), payload: Array(ghost[index]))) == [])
        }
        #expect(Self.writes(try assembler.take(headers: nil, payload: Self.whole)) == ["/a=1"])
        #expect(assembler.droppedParts == 2)
        // A later part of that batch, alone, is dropped too (it belongs to no batch being joined).
        #expect(Self.writes(try assembler.take(headers: Self.headers(2, of: ghost.count, batch: "g"), payload: Array(ghost[2]))) == [])
        // A first part, then the first part of another batch: the first batch is dropped, the second joins.
        let pieces = BatchParts.split(Self.whole, limit: 10)
        _ = try assembler.take(headers: Self.headers(0, of: ghost.count, batch: "g2"), payload: Array(ghost[0]))
        var last: ClusterBatch = .operations([])
        for (index, piece) in pieces.enumerated() {
            last = try assembler.take(headers: Self.headers(index, of: pieces.count, batch: "b2"), payload: Array(piece))
        }
        #expect(Self.writes(last) == ["/a=1"])
        // A part of another batch in the middle: both incomplete, nothing applies.
        _ = try assembler.take(headers: Self.headers(0, of: pieces.count, batch: "b3"), payload: Array(pieces[0]))
        #expect(Self.writes(try assembler.take(headers: Self.headers(1, of: pieces.count, batch: "other"), payload: Array(pieces[1]))) == [])
        #expect(Self.writes(try assembler.take(headers: Self.headers(2, of: pieces.count, batch: "b3"), payload: Array(pieces[2]))) == [])
        #expect(throws: ClusterBatchError.self) {
            var headers = NATSHeaders()
            headers.set(BatchParts.partHeader, "7/3")
            _ = try assembler.take(headers: headers, payload: [])
        }
    }
}
