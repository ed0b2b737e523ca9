// NodeMergeTests -- multi-child and multi-path updates agree with applying the writes one by one.

import Testing

@testable import CanopyCore

@Suite struct NodeMergeTests {
    let base: Node = try! Node.from(json: [
        "a": ["x": 1, "y": 2], "b": "leaf", "c": [".value": 3, ".priority": 1], "10": true, "2": false,
    ])

    /// The reference semantics: apply each write in order with `setting`.
    func sequential(_ node: Node, _ updates: [(path: Path, node: Node)]) -> Node {
        updates.reduce(node) { $0.setting($1.node, at: $1.path) }
    }

    func p(_ text: String) -> Path { try! Path(parsing: text, allowPriorityLeaf: true) }

    @Test func updatingChildrenMatchesSequentialWrites() {
        let updates: [(key: String, node: Node)] = [
            ("b", .empty), ("z", Node(leaf: 9)), ("a", Node(leaf: "new")), ("1", Node(leaf: 1)), ("missing", .empty),
        ]
        let merged = base.updatingChildren(updates)
        let expected = updates.reduce(base) { $0.settingChild($1.key, $1.node) }
        #expect(merged == expected)
        #expect(merged.childKeys == ["1", "2", "10", "a", "c", "z"])
        #expect(merged.child("c") === base.child("c"))
    }

    @Test func fewUpdatesIntoALongListMatchSequentialWrites() {
        let long = Node(children: (0..<2000).map { (key: "k\($0)", node: Node(leaf: .int(Int64($0)))) })
        let updates: [(key: String, node: Node)] = [
            ("k7", .empty), ("k1999", Node(leaf: "last")), ("new", Node(leaf: true)), ("k500", Node(leaf: 5)),
            ("absent", .empty),
        ]
        let merged = long.updatingChildren(updates)
        #expect(merged == updates.reduce(long) { $0.settingChild($1.key, $1.node) })
        #expect(merged.childCount == 2000 && !merged.hasChild("k7") && merged.child("new").value == true)
        let all = long.childKeys.map { (key: $0, node: Node.empty) }
        #expect(long.updatingChildren(all + [("x", Node(leaf: 1))]).childKeys == ["x"])
    }

    @Test func updatingChildrenEdgeCases() {
        #expect(base.updatingChildren([]) === base)
        let removeAll = base.childKeys.map { (key: $0, node: Node.empty) }
        #expect(base.updatingChildren(removeAll) === Node.empty)
        let leaf = Node(leaf: 5, priority: 2)
        #expect(leaf.updatingChildren([("q", .empty), ("r", .empty)]) == leaf)
        #expect(leaf.updatingChildren([(".priority", Node(leaf: 7)), ("r", .empty)]) == Node(leaf: 5, priority: 7))
        let grown = leaf.updatingChildren([("q", Node(leaf: 1)), ("r", Node(leaf: 2))])
        #expect(grown.value == nil && grown.childKeys == ["q", "r"] && grown.priority == 2)
        let prioritised = base.updatingChildren([(".priority", Node(leaf: "p")), ("b", .empty)])
        #expect(prioritised.priority == "p" && !prioritised.hasChild("b"))
    }

    @Test func mergingMatchesSequentialWrites() {
        let updates: [(path: Path, node: Node)] = [
            (p("/a/y"), .empty), (p("/a/z/deep"), Node(leaf: "d")), (p("/b"), Node(leaf: "B")),
            (p("/c/.priority"), Node(leaf: 4)), (p("/new/k"), Node(leaf: true)), (p("/2"), .empty),
        ]
        let merged = base.merging(updates)
        #expect(merged == sequential(base, updates))
        // Untouched children are shared: "c" is kept as a node (a leaf with a priority); "10", a plain leaf, is
        // packed and has no identity of its own (PackedChildren).
        #expect(merged.child("10") == base.child("10"))
        #expect(base.merging([(p("/b"), Node(leaf: "B"))]).child("c") === base.child("c"))
        #expect(merged.child("c").priority == 4)
    }

    @Test func mergingOverlappingPathsAppliesInOrder() {
        let updates: [(path: Path, node: Node)] = [
            (p("/a"), Node(leaf: 1)), (p("/a/b"), Node(leaf: 2)), (p("/q/r"), Node(leaf: 3)), (p("/q"), .empty),
        ]
        #expect(base.merging(updates) == sequential(base, updates))
        let rootFirst: [(path: Path, node: Node)] = [(.root, Node(leaf: 1)), (p("/x"), Node(leaf: 2))]
        #expect(base.merging(rootFirst) == sequential(base, rootFirst))
    }

    @Test func mergingEmptiesPruneAncestors() {
        let tree = try! Node.from(json: ["a": ["b": ["c": 1]], "k": 1])
        let merged = tree.merging([(p("/a/b/c"), .empty), (p("/k"), .empty)])
        #expect(merged.isEmpty)
    }

    @Test func randomMergesMatchSequentialWrites() {
        var rng = SeededGenerator(seed: 99)
        let keys = ["a", "b", "1", "10", "x"]
        var tree = base
        for _ in 0..<1000 {
            var updates: [(path: Path, node: Node)] = []
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let depth = Int.random(in: 1...3, using: &rng)
                let path = Path(segments: (0..<depth).map { _ in keys.randomElement(using: &rng)! })
                let value: Node = Bool.random(using: &rng) ? .empty : Node(leaf: .int(Int64(rng.next() % 100)))
                updates.append((path, value))
            }
            let expected = sequential(tree, updates)
            let got = tree.merging(updates)
            let writes = updates.map { "\($0.path)=\($0.node.json())" }
            #expect(got == expected, "\(tree.json()) + \(writes) -> \(got.json()) vs \(expected.json())")
            tree = expected
        }
    }

    /// Many children written at once under a long list (found by walking the children, not one search each): new,
    /// replaced and removed children, integer-like keys and names, in the order `compareKeys` gives them.
    @Test func denseMergesIntoALongListMatchSequentialWrites() {
        var rng = SeededGenerator(seed: 7)
        var names: [String] = []
        for i in 0..<3_000 {
            switch i % 3 {
            case 0: names.append(String(i))
            case 1: names.append("n\(i)")
            default: names.append("-\(i)")
            }
        }
        var initial: [(key: String, node: Node)] = []
        for (i, name) in names.enumerated() where i % 2 == 0 { initial.append((name, Node(leaf: .int(Int64(i))))) }
        var tree = Node.empty.updatingChildren(initial)
        for round in 0..<20 {
            var updates: [(path: Path, node: Node)] = []
            var chosen = Set<String>()
            for _ in 0..<Int.random(in: 200...600, using: &rng) {
                let name = names.randomElement(using: &rng)!
                guard chosen.insert(name).inserted else { continue }
                let value: Node = Int.random(in: 0..<4, using: &rng) == 0 ? .empty : Node(leaf: .int(Int64(round)))
                let deeper = Bool.random(using: &rng)
                updates.append((Path(segments: deeper ? [name, "x"] : [name]), value))
            }
            let expected = sequential(tree, updates)
            #expect(tree.merging(updates) == expected, "round \(round)")
            tree = expected
        }
    }
}
