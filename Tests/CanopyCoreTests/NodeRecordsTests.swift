// NodeRecordsTests -- flattening a tree into storage records and rebuilding it with NodeBuilder.

import Testing

@testable import CanopyCore

@Suite struct NodeRecordsTests {
    func records(_ node: Node, under base: [String] = []) -> [String] {
        var out: [String] = []
        node.forEachRecord(under: base) { record in
            switch record {
            case .leaf(let path, let value, let priority):
                out.append("leaf /\(path.joined(separator: "/"))=\(value)" + (priority.map { " p=\($0)" } ?? ""))
            case .priority(let path, let priority):
                out.append("prio /\(path.joined(separator: "/"))=\(priority)")
            }
        }
        return out
    }

    @Test func flattensDepthFirstInKeyOrder() throws {
        let tree = try Node.from(json: [
            "b": ["x": 1, ".priority": 2], "10": "t", "2": [".value": false, ".priority": "p"], ".priority": 1.5,
        ])
        #expect(
            records(tree) == [
                "prio /=1.5", "leaf /2=false p=\"p\"", "leaf /10=\"t\"", "prio /b=2", "leaf /b/x=1",
            ])
        #expect(records(tree.child("b"), under: ["b"]) == ["prio /b=2", "leaf /b/x=1"])
        #expect(records(.empty).isEmpty)
        #expect(records(Node(leaf: 3)) == ["leaf /=3"])
    }

    @Test func rebuildsFromShuffledRecords() throws {
        var rng = SeededGenerator(seed: 5)
        for _ in 0..<50 {
            var tree = Node.empty
            for _ in 0..<40 {
                let depth = Int.random(in: 1...4, using: &rng)
                let path = Path(
                    segments: (0..<depth).map { _ in ["a", "b", "1", "10", "é", "e\u{301}"].randomElement(using: &rng)!
                    })
                let priority: JSONValue? = Bool.random(using: &rng) ? .int(Int64(rng.next() % 5)) : nil
                tree = tree.setting(Node(leaf: .int(Int64(rng.next() % 100)), priority: priority), at: path)
                if Bool.random(using: &rng), let parent = path.parent {
                    tree = tree.setting(tree.node(at: parent).withPriority("q"), at: parent)
                }
            }
            var all: [NodeRecord] = []
            tree.forEachRecord { all.append($0) }
            let inOrder = NodeBuilder()
            for record in all { try inOrder.add(record) }
            #expect(inOrder.build() == tree)
            all.shuffle(using: &rng)
            let builder = NodeBuilder()
            for record in all { try builder.add(record) }
            #expect(builder.build() == tree)
            let finishing = NodeBuilder()
            for record in all { try finishing.add(record) }
            #expect(finishing.finish() == tree)
        }
    }

    /// A builder that seals completed subtrees builds the same tree from rows in storage order (keys compared byte
    /// by byte: "a b" sorts between "a" and "a/b") and, reopening what it sealed, from rows in any order.
    @Test func sealingCompletedSubtreesBuildsTheSameTree() throws {
        var rng = SeededGenerator(seed: 9)
        let keys = ["a", "a b", "a0", "b", "1", "10", "2", "é", "e\u{301}", "\u{1F600}", "\u{FFFD}"]
        for round in 0..<200 {
            var tree = Node.empty
            for _ in 0..<Int.random(in: 1...60, using: &rng) {
                let depth = Int.random(in: 1...4, using: &rng)
                let path = Path(segments: (0..<depth).map { _ in keys.randomElement(using: &rng)! })
                let value: JSONValue = Bool.random(using: &rng) ? .int(Int64(rng.next() % 100)) : .string("v")
                let priority: JSONValue? = Int.random(in: 0..<5, using: &rng) == 0 ? 1 : nil
                tree = tree.setting(Node(leaf: value, priority: priority), at: path)
                if Int.random(in: 0..<5, using: &rng) == 0, let parent = path.parent, !parent.isRoot {
                    tree = tree.setting(tree.node(at: parent).withPriority("q"), at: parent)
                }
            }
            var all: [NodeRecord] = []
            tree.forEachRecord { all.append($0) }
            all.sort { a, b in
                Array(a.path.joined(separator: "/").utf8).lexicographicallyPrecedes(b.path.joined(separator: "/").utf8)
            }
            let ordered = NodeBuilder(sealsCompletedSubtrees: true)
            for record in all { try ordered.add(record) }
            let built = ordered.finish()
            #expect(built == tree && built.hash == tree.hash, "round \(round)")
            all.shuffle(using: &rng)
            let shuffled = NodeBuilder(sealsCompletedSubtrees: true)
            for record in all { try shuffled.add(record) }
            #expect(shuffled.build() == tree && shuffled.finish() == tree, "round \(round), shuffled")
        }
        // Conflicts resolve as without sealing, also when a later record reopens a sealed subtree: a leaf with
        // records below it, uncovered again by a null record; a priority whose children come later.
        let records: [NodeRecord] = [
            .leaf(path: ["a"], value: 1, priority: nil), .leaf(path: ["b", "x"], value: 1, priority: nil),
            .leaf(path: ["a", "b"], value: 2, priority: nil), .leaf(path: ["c"], value: 1, priority: nil),
            .leaf(path: ["b", "y"], value: 3, priority: nil), .leaf(path: ["c"], value: 4, priority: 1),
            .priority(path: ["b"], priority: 5), .priority(path: ["gone"], priority: 3),
            .leaf(path: ["d"], value: 1, priority: nil), .leaf(path: ["d", "e"], value: 2, priority: nil),
            .leaf(path: ["f"], value: 0, priority: nil), .leaf(path: ["d", "e"], value: .null, priority: nil),
            .priority(path: ["g", "h"], priority: 1), .leaf(path: ["i"], value: 0, priority: nil),
            .leaf(path: ["g", "h", "j"], value: 0, priority: nil),
        ]
        let sealing = NodeBuilder(sealsCompletedSubtrees: true)
        let plain = NodeBuilder()
        for record in records {
            try sealing.add(record)
            try plain.add(record)
        }
        let expected = try Node.from(json: [
            "a": ["b": 2], "b": ["x": 1, "y": 3, ".priority": 5], "c": [".value": 4, ".priority": 1], "d": 1, "f": 0,
            "g": ["h": ["j": 0, ".priority": 1]], "i": 0,
        ])
        #expect(plain.finish() == expected)
        #expect(sealing.finish() == expected)
    }

    /// `finish()` builds the same tree as `build()`, large lists (chunked children) included, and leaves the
    /// builder empty: the records it released are gone, later records start a new tree.
    @Test func finishBuildsTheTreeAndEmptiesTheBuilder() throws {
        var records: [NodeRecord] = []
        for index in 0..<5_000 {
            records.append(.leaf(path: ["items", "o\(index)", "name"], value: .string("n\(index)"), priority: nil))
            records.append(.leaf(path: ["items", "o\(index)", "n"], value: .int(Int64(index)), priority: nil))
        }
        records.append(.priority(path: ["items"], priority: 7))
        let built = NodeBuilder()
        let finished = NodeBuilder()
        for record in records.reversed() {
            try built.add(record)
            try finished.add(record)
        }
        let tree = finished.finish()
        #expect(tree == built.build())
        #expect(tree.node(at: Path(segments: ["items"])).childCount == 5_000)
        #expect(tree.node(at: Path(segments: ["items"])).priority == .int(7))
        #expect(tree.node(at: Path(segments: ["items", "o4321", "name"])).value == .string("n4321"))
        #expect(finished.finish() === Node.empty)
        try finished.add(.leaf(path: ["a"], value: 1, priority: nil))
        #expect(finished.finish() == (try Node.from(json: ["a": 1])))
    }

    @Test func builderResolvesConflicts() throws {
        let builder = NodeBuilder()
        try builder.add(.leaf(path: ["a"], value: 1, priority: nil))
        try builder.add(.leaf(path: ["a", "b"], value: 2, priority: nil))
        try builder.add(.priority(path: ["gone"], priority: 3))
        try builder.add(.leaf(path: ["c"], value: 1, priority: nil))
        try builder.add(.leaf(path: ["c"], value: 4, priority: 1))
        #expect(builder.build() == (try Node.from(json: ["a": ["b": 2], "c": [".value": 4, ".priority": 1]])))
        #expect(NodeBuilder().build() === Node.empty)
    }

    @Test func builderRejectsBadRecords() {
        let builder = NodeBuilder()
        #expect(throws: DataError(.invalidKey, atText: "/a")) {
            try builder.add(.leaf(path: ["a", "b.c"], value: 1, priority: nil))
        }
        #expect(throws: DataError(.invalidValueWrapper, atText: "/a")) {
            try builder.add(.leaf(path: ["a"], value: ["x": 1], priority: nil))
        }
        #expect(throws: DataError(.invalidNumber, atText: "/a")) {
            try builder.add(.leaf(path: ["a"], value: .double(.nan), priority: nil))
        }
        #expect(throws: DataError(.invalidPriority, atText: "/a")) {
            try builder.add(.priority(path: ["a"], priority: true))
        }
        #expect(throws: DataError.self) {
            try builder.add(.leaf(path: Array(repeating: "k", count: 33), value: 1, priority: nil))
        }
    }
}
