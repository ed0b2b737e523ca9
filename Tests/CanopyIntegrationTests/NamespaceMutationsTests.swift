// NamespaceMutationsTests -- the rows a write stores turn the SQLite file into exactly the in-memory tree.
//
// `Namespace.mutations` writes only the rows that changed, comparing the old and new trees (a vanished leaf is one
// row delete, a vanished subtree one range delete). Reading the file back must give the tree the daemon holds in
// memory. (This test
// found that a restart lost the priorities of internal nodes: `Namespace.load` read them from the wrong column.)

import CanopyCore
import CanopyStore
import Foundation
import Synchronization
import Testing

@testable import CanopyServer

@Suite struct NamespaceMutationsTests {
    private let keys = ["a", "b", "1", "x-y"]

    private func randomLeaf(_ rng: inout SplitMix64) -> JSONValue {
        switch rng.next(below: 5) {
        case 0: .int(Int64(rng.next(below: 4)))
        case 1: .double(Double(rng.next(below: 4)) + 0.5)
        case 2: .double(Double(rng.next(below: 3)))  // whole doubles: stored apart from the equal integers
        case 3: .string(["s", "t", ""][rng.next(below: 3)])
        default: .bool(rng.next(below: 2) == 0)
        }
    }

    /// A value in export format: a leaf, a small or a large object, some with priorities, or null.
    private func randomValue(_ rng: inout SplitMix64, depth: Int = 0) -> JSONValue {
        switch rng.next(below: 9) {
        case 0: return .null
        case 1, 2: return randomLeaf(&rng)
        case 3:
            // A wide object, so overwriting it later compares many children; some differ.
            return .object((0..<40).map { JSONMember("k\($0)", .int(Int64($0 + rng.next(below: 2)))) })
        case 4:
            return .object([JSONMember(".value", randomLeaf(&rng)), JSONMember(".priority", .int(Int64(rng.next(below: 3))))])
        default:
            guard depth < 2 else { return randomLeaf(&rng) }
            var members: [JSONMember] = []
            for key in keys where rng.next(below: 2) == 0 {
                members.append(JSONMember(key, randomValue(&rng, depth: depth + 1)))
            }
            if rng.next(below: 4) == 0 { members.append(JSONMember(".priority", .string("p\(rng.next(below: 2))"))) }
            return .object(members)
        }
    }

    private func submit(_ store: NamespaceStore, _ mutations: [StoreMutation]) throws {
        let done = DispatchSemaphore(value: 0)
        let failure = Mutex<StoreError?>(nil)
        store.submit(mutations) { result in
            if case .failure(let error) = result { failure.withLock { $0 = error } }
            done.signal()
        }
        done.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    @Test func randomWritesReadBackAsTheTreeInMemory() throws {
        let directory = NSTemporaryDirectory() + "canopy-mutations-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try NamespaceStore(path: directory + "/ns.sqlite")
        defer { store.flushAndClose() }
        var rng = SplitMix64(seed: 2026)
        var root = Node.empty
        var sawRowWrites = false
        var sawRangeDeletes = false
        for step in 1...600 {
            let depth = 1 + rng.next(below: 3)
            let path = Path(segments: (0..<depth).map { _ in keys[rng.next(below: keys.count)] })
            let node = try Node.from(json: randomValue(&rng), at: path)
            let newRoot = Namespace.applying([(path, node)], to: root)
            let mutations = Namespace.mutations(for: path, before: root, after: newRoot)
            for mutation in mutations {
                switch mutation {
                case .deleteRow: sawRowWrites = true
                case .deleteSubtree: sawRangeDeletes = true
                default: break
                }
            }
            try submit(store, mutations)
            root = newRoot
            if step % 25 == 0 {
                let loaded = try Namespace.load(from: store)
                #expect(loaded == root, "after \(step) writes the file differs from memory")
                #expect(loaded.json(export: true) == root.json(export: true))
            }
        }
        #expect(sawRowWrites)
        #expect(sawRangeDeletes)
    }

    @Test func overwritingASmallObjectWritesOnlyTheRowsThatChanged() throws {
        let path = Path(segments: ["users", "7"])
        let before = Namespace.applying(
            [(path, try Node.from(json: ["seq": 1, "sentAt": 10, "name": "x"]))], to: .empty)
        let after = Namespace.applying([(path, try Node.from(json: ["seq": 2, "sentAt": 11, "name": "x"]))], to: before)
        let mutations = Namespace.mutations(for: path, before: before, after: after)
        let described = mutations.map { mutation -> String in
            switch mutation {
            case .putLeaf(let p, let value, _): "put \(p.joined(separator: "/"))=\(value.serialized())"
            case .deleteRow(let p): "delete row \(p.joined(separator: "/"))"
            case .deleteSubtree(let p): "delete \(p.joined(separator: "/"))"
            case .putPriority(let p, _): "priority \(p.joined(separator: "/"))"
            }
        }
        #expect(described.sorted() == ["put users/7/sentAt=11", "put users/7/seq=2"])
        // A child that disappears loses its row; nothing else is deleted.
        let shrunk = Namespace.applying([(path, try Node.from(json: ["seq": 2]))], to: after)
        let removal = Namespace.mutations(for: path, before: after, after: shrunk)
        #expect(removal.count == 2)
        #expect(removal.allSatisfy { if case .deleteRow = $0 { true } else { false } })
    }

    @Test func overwritingALargeObjectWritesOnlyWhatChanged() throws {
        let path = Path(segments: ["content", "csv"])
        func rows(_ edit: (Int) -> JSONValue?) -> JSONValue {
            .object((0..<1000).compactMap { i in edit(i).map { JSONMember("r\(i)", $0) } })
        }
        let before = Namespace.applying(
            [(path, try Node.from(json: rows { ["seat": .int(Int64($0))] }))], to: .empty)
        // Three rows edited, one removed, one nested value turned into a leaf, one added.
        let edited = rows { i in
            switch i {
            case 3, 500, 998: ["seat": .int(-1)]
            case 7: nil
            case 9: "gone"
            default: ["seat": .int(Int64(i))]
            }
        }
        var json = edited
        if case .object(var members) = json {
            members.append(JSONMember("zz", ["seat": 1]))
            json = .object(members)
        }
        let after = Namespace.applying([(path, try Node.from(json: json))], to: before)
        let described = Namespace.mutations(for: path, before: before, after: after).map { mutation -> String in
            switch mutation {
            case .putLeaf(let p, let value, _): "put \(p.joined(separator: "/"))=\(value.serialized())"
            case .deleteRow(let p): "delete row \(p.joined(separator: "/"))"
            case .deleteSubtree(let p): "delete \(p.joined(separator: "/"))"
            case .putPriority(let p, _): "priority \(p.joined(separator: "/"))"
            }
        }
        #expect(
            Set(described) == [
                "delete content/csv/r7", "delete content/csv/r9", "put content/csv/r3/seat=-1",
                "put content/csv/r500/seat=-1", "put content/csv/r9=\"gone\"", "put content/csv/r998/seat=-1",
                "put content/csv/zz/seat=1",
            ])
        // The order matters where a subtree is replaced: its range delete comes before its new rows.
        #expect(described.count == 7)
        let r9 = described.filter { $0.hasSuffix("/r9") || $0.contains("/r9=") }
        #expect(r9 == ["delete content/csv/r9", "put content/csv/r9=\"gone\""])
    }
}
