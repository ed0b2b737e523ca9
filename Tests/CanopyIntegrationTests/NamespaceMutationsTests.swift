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

    /// A store in a fresh directory; `remove()` closes it and deletes the directory.
    private struct TemporaryStore {
        let directory = NSTemporaryDirectory() + "canopy-mutations-" + UUID().uuidString
        let store: NamespaceStore

        init() throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            store = try NamespaceStore(path: directory + "/ns.sqlite")
        }

        func remove() {
            store.flushAndClose()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    @Test func randomWritesReadBackAsTheTreeInMemory() throws {
        let temporary = try TemporaryStore()
        defer { temporary.remove() }
        let store = temporary.store
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

    /// An admin action's rows made before its new tree exists (`EarlyPublishRows`) turn the file into that tree:
    /// random actions of several disjoint writes (deletes, `.priority` writes, writes below leaves and below nodes
    /// with priorities among them), each piece made early where it can be and by `PublishRows` where not.
    @Test func rowsMadeBeforeTheNewTreeReadBackAsIt() throws {
        let temporary = try TemporaryStore()
        defer { temporary.remove() }
        let store = temporary.store
        var rng = SplitMix64(seed: 7)
        var root = Node.empty
        var madeEarly = 0
        var leftToTheWriter = 0
        for step in 1...400 {
            var writes: [(path: Path, node: Node)] = []
            for _ in 0..<(1 + rng.next(below: 5)) {
                let depth = 1 + rng.next(below: 3)
                var segments = (0..<depth).map { _ in keys[rng.next(below: keys.count)] }
                if rng.next(below: 12) == 0 { segments.append(".priority") }
                let path = Path(segments: segments)
                // Disjoint, as an action's writes are: none at, above or below one already chosen.
                guard !writes.contains(where: { $0.path.isAncestorOrSelf(of: path) || path.isAncestor(of: $0.path) })
                else { continue }
                let json: JSONValue = segments.last == ".priority" ? .int(Int64(rng.next(below: 3))) : randomValue(&rng)
                writes.append((path, try Node.from(json: json, at: path)))
            }
            let newRoot = Namespace.applying(writes, to: root)
            let early = EarlyPublishRows(writes: writes, before: root)
            if early.isMadeEarly(0) { madeEarly += 1 } else { leftToTheWriter += 1 }
            if step % 2 == 0 { early.makeAll() }  // made by the helper first, or taken unmade by the writer
            let rows = PublishRows(paths: writes.map(\.path), before: root, after: newRoot, early: early)
            try submit(store, rows.all())
            root = newRoot
            if step % 20 == 0 {
                let loaded = try Namespace.load(from: store)
                #expect(loaded == root, "after \(step) actions the file differs from memory")
                #expect(loaded.json(export: true) == root.json(export: true))
            }
        }
        // Both ways were taken, many times each.
        #expect(madeEarly > 100)
        #expect(leftToTheWriter > 20)
    }

    /// A piece is handed over once: asked again (a group retried with savepoints), `PublishRows` makes it from the
    /// new tree, and the rows are the same.
    @Test func anEarlyPieceIsHandedOverOnceAndMadeAgainAlike() throws {
        let before = try Node.from(json: ["users": ["a": ["content": ["x": 1]], "b": ["name": "B"]]])
        let writes: [(path: Path, node: Node)] = [
            (Path(segments: ["users", "a", "content"]), try Node.from(json: ["y": 2])),
            (Path(segments: ["users", "b", "content"]), try Node.from(json: ["z": 3])),
        ]
        let after = Namespace.applying(writes, to: before)
        let early = EarlyPublishRows(writes: writes, before: before)
        early.makeAll()
        let rows = PublishRows(paths: writes.map(\.path), before: before, after: after, early: early)
        let first = rows.rows(ofPiece: 0)
        #expect(early.take(0) == nil)
        let again = rows.rows(ofPiece: 0)
        #expect(first.map(String.init(describing:)) == again.map(String.init(describing:)))
        #expect(first.count == 3)  // delete users/a/content/x, put y, put z
    }

    /// The writes whose rows need the new tree are left to `PublishRows`, and the file still ends as that tree: a
    /// write below a leaf (the leaf's row goes), a delete that empties a node with a priority (its priority row
    /// goes), a `.priority` write (its parent is rewritten).
    @Test func writesWhoseRowsNeedTheNewTreeAreNotMadeEarly() throws {
        let temporary = try TemporaryStore()
        defer { temporary.remove() }
        let store = temporary.store
        let start = try Node.from(json: [
            "leaf": 5, "kept": ["x": 1], "ranked": [".priority": "p", "only": 1], "plain": ["only": 1, "other": 2],
        ])
        try submit(store, Namespace.mutations(for: .root, before: .empty, after: start))
        let cases: [(String, [(path: Path, node: Node)], Bool)] = [
            ("below a leaf", [(Path(segments: ["leaf", "a"]), Node(leaf: .int(1))), (Path(segments: ["leaf", "b"]), Node(leaf: .int(2)))], false),
            ("emptying a node with a priority", [(Path(segments: ["ranked", "only"]), .empty)], false),
            ("a priority", [(Path(segments: ["kept", ".priority"]), Node(leaf: .int(3)))], false),
            ("a delete below no priority", [(Path(segments: ["plain", "only"]), .empty)], true),
            ("a new location", [(Path(segments: ["fresh", "a"]), Node(leaf: .string("s")))], true),
        ]
        var root = start
        for (name, writes, early) in cases {
            let newRoot = Namespace.applying(writes, to: root)
            let rows = EarlyPublishRows(writes: writes, before: root)
            #expect(rows.isMadeEarly(0) == early, "\(name)")
            try submit(store, PublishRows(paths: writes.map(\.path), before: root, after: newRoot, early: rows).all())
            root = newRoot
            let loaded = try Namespace.load(from: store)
            #expect(loaded.json(export: true) == root.json(export: true), "\(name)")
        }
        // The emptied node's priority is gone from the file: a new child there has none.
        let child = [(path: Path(segments: ["ranked", "again"]), node: Node(leaf: .int(1)))]
        let newRoot = Namespace.applying(child, to: root)
        try submit(store, PublishRows(paths: [child[0].path], before: root, after: newRoot).all())
        #expect(try Namespace.load(from: store).json(export: true) == newRoot.json(export: true))
    }
}
