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
