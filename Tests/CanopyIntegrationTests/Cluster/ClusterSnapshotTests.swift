// ClusterSnapshotTests -- the snapshot format (ClusterSnapshot.swift): the body round-trips a tree with
// priorities and rules, splits into chunks and is reassembled only when whole, in order and matching its hash;
// the log's chain check tells a trimmed gap. No NATS: the cluster tests cover the stream side.

import CanopyCore
import CanopyNATS
import Testing

@testable import CanopyServer

@Suite struct ClusterSnapshotTests {
    static let tree = try! Node.from(
        json: [
            "users": ["u1": ["name": "Ada", ".priority": 2], "u2": ["name": "Grace"]],
            "count": 41, "title": .string(String(repeating: "é", count: 3_000)),
        ])

    /// Chunks as a stream would deliver them, with the headers the writer sets.
    static func chunks(of body: [UInt8], id: String, size: Int) -> [(headers: NATSHeaderLookup, payload: [UInt8])] {
        let parts = ClusterSnapshot.split(body, size: size)
        return parts.enumerated().map { index, part in
            let headers = ["Canopy-Snapshot": id, "Canopy-Chunk": "\(index)/\(parts.count)"]
            return ({ headers[$0] }, Array(part))
        }
    }

    static func manifest(_ body: [UInt8], id: String, chunks: Int, sequence: UInt64 = 77) -> SnapshotManifest {
        SnapshotManifest(
            id: id, sequence: sequence, first: 10, last: 10 + UInt64(chunks) - 1, chunks: chunks, bytes: body.count,
            sha256: Hash.sha256Hex(body))
    }

    @Test func aSnapshotRoundTripsThroughChunksAndItsManifest() throws {
        let snapshot = ClusterSnapshot(namespace: "event", sequence: 77, rules: "{\"rules\":{}} // c", tree: Self.tree)
        let body = snapshot.encode()
        let parts = Self.chunks(of: body, id: "c1.3.77", size: 1_000)
        #expect(parts.count == (body.count + 999) / 1_000 && parts.count > 3)
        let manifest = Self.manifest(body, id: "c1.3.77", chunks: parts.count)
        #expect(try SnapshotManifest.decode(manifest.encode(), streamSequence: 5) == {
            var read = manifest
            read.streamSequence = 5
            return read
        }())
        // Another writer's chunks interleaved with these are skipped.
        let foreign = Self.chunks(of: Array("other".utf8), id: "c2.4.80", size: 1_000)
        var mixed = parts
        mixed.insert(foreign[0], at: 2)
        let read = try ClusterSnapshot.assemble(manifest, namespace: "event", messages: mixed)
        #expect(read.tree == Self.tree && read.rules == snapshot.rules && read.sequence == 77)
        #expect(read.tree.child("users").child("u1").priority == 2)
        // An empty tree without rules is one chunk.
        let empty = ClusterSnapshot(namespace: "event", sequence: 1, rules: nil, tree: .empty).encode()
        #expect(ClusterSnapshot.split(empty).count == 1)
        #expect(ClusterSnapshot.split([]).count == 1)
    }

    @Test func anIncompleteReorderedOrAlteredSnapshotIsRefused() throws {
        let body = ClusterSnapshot(namespace: "event", sequence: 77, rules: nil, tree: Self.tree).encode()
        let parts = Self.chunks(of: body, id: "s", size: 1_000)
        let manifest = Self.manifest(body, id: "s", chunks: parts.count)
        func refusal(_ messages: [(headers: NATSHeaderLookup, payload: [UInt8])], _ manifest: SnapshotManifest = manifest,
            namespace: String = "event") -> String?
        {
            do {
                _ = try ClusterSnapshot.assemble(manifest, namespace: namespace, messages: messages)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(refusal(Array(parts.dropLast()))?.contains("of its \(parts.count) chunks") == true)
        #expect(refusal(Array(parts.dropFirst()))?.contains("chunk 0 of") == true)
        var swapped = parts
        swapped.swapAt(1, 2)
        #expect(refusal(swapped)?.contains("out of order") == true)
        var altered = parts
        altered[1].payload[10] ^= 0x20
        #expect(refusal(altered)?.contains("SHA-256") == true)
        var short = parts
        short[1].payload.removeLast()
        #expect(refusal(short)?.contains("bytes") == true)
        #expect(refusal(parts, namespace: "another")?.contains("not the manifest's") == true)
        var wrongSequence = manifest
        wrongSequence.sequence = 78
        #expect(refusal(parts, wrongSequence)?.contains("not the manifest's") == true)
        // A body that hashes right but is not a snapshot.
        let junk = Array("{\"v\":1}".utf8)
        #expect(refusal(Self.chunks(of: junk, id: "s", size: 1_000), Self.manifest(junk, id: "s", chunks: 1))?
            .contains("not a version 1 snapshot") == true)
        #expect(throws: ClusterSnapshotError.self) { try SnapshotManifest.decode(Array("{\"v\":1}".utf8), streamSequence: 1) }
    }

    @Test func theLogChainTellsAGap() throws {
        var headers = NATSHeaders()
        headers.set("Nats-Expected-Last-Subject-Sequence", "40")
        try ClusterNode.checkChain(headers, sequence: 45, after: 40, subject: "canopy.log.1.e")
        let gap = #expect(throws: LogGapError.self) {
            try ClusterNode.checkChain(headers, sequence: 45, after: 30, subject: "canopy.log.1.e")
        }
        #expect(gap?.description.contains("follows 40, not 30") == true)
        // A message without the header (none is written so, but an older writer's could be) is not judged.
        try ClusterNode.checkChain(nil, sequence: 45, after: 30, subject: "canopy.log.1.e")
    }
}
