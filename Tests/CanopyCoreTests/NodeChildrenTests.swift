// NodeChildrenTests -- the flat/chunked child list stays sorted and consistent through inserts and removals.

import Testing

@testable import CanopyCore

@Suite struct NodeChildrenTests {
    /// Checks every access path of `node.children` against the expected sorted keys.
    func check(_ node: Node, _ expected: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let children = node.children
        #expect(children.count == expected.count, sourceLocation: sourceLocation)
        #expect(children.map(\.key) == expected, sourceLocation: sourceLocation)  // iterator
        #expect(children.indices.map { children[$0].key } == expected, sourceLocation: sourceLocation)  // subscript
        for key in expected where !node.hasChild(key) {
            Issue.record("missing \(key)", sourceLocation: sourceLocation)
        }
    }

    @Test func randomInsertsAndRemovalsAcrossTheChunkThreshold() {
        var rng = SeededGenerator(seed: 11)
        var node = Node.empty
        var reference: [String: Int64] = [:]
        var sawChunks = false
        for round in 0..<6000 {
            // Grow to ~1500 keys, then shrink back below the flat limit.
            let growing = round < 3500
            let key = String(Int.random(in: 0..<1800, using: &rng)) + (Bool.random(using: &rng) ? "" : "k")
            if growing || Int.random(in: 0..<10, using: &rng) == 0 {
                let value = Int64(round)
                node = node.settingChild(key, Node(leaf: .int(value)))
                reference[key] = value
            } else {
                let victim = reference.keys.randomElement(using: &rng) ?? key
                node = node.settingChild(victim, .empty)
                reference[victim] = nil
            }
            sawChunks = sawChunks || node.children.chunkCount > 1
            if round % 250 == 0 {
                check(node, reference.keys.sorted { compareKeys($0, $1) < 0 })
            }
        }
        #expect(sawChunks)
        check(node, reference.keys.sorted { compareKeys($0, $1) < 0 })
        for (key, value) in reference { #expect(node.child(key).value == .int(value)) }
    }

    @Test func largeNodesAreChunkedAndEqualToFlatBuilds() throws {
        let keys = (0..<1000).map { "key\($0)" }
        let built = Node(children: keys.map { (key: $0, node: Node(leaf: 1)) })
        #expect(built.children.chunkCount > 1)
        var incremental = Node.empty
        for key in keys.reversed() { incremental = incremental.settingChild(key, Node(leaf: 1)) }
        #expect(incremental == built)
        #expect(incremental.hash == built.hash)
        check(incremental, keys.sorted { compareKeys($0, $1) < 0 })
        // Replacing the first child of a chunk keeps lookups right.
        let first = built.children[128].key
        let replaced = built.settingChild(first, Node(leaf: 2))
        #expect(replaced.child(first).value == 2)
        #expect(replaced.childCount == 1000)
        // Removing everything but a few returns to a flat list.
        var shrinking = built
        for key in keys.dropFirst(5) { shrinking = shrinking.settingChild(key, .empty) }
        #expect(shrinking.children.chunkCount == 1)
        check(shrinking, Array(keys.prefix(5)).sorted { compareKeys($0, $1) < 0 })
    }

    @Test func keysBeforeTheFirstChunkInsertAtTheFront() {
        let built = Node(children: (1000..<1400).map { (key: "k\($0)", node: Node(leaf: 1)) })
        let updated = built.settingChild("a", Node(leaf: 0)).settingChild("-5", Node(leaf: 0))
        #expect(updated.children.first?.key == "-5")
        #expect(updated.children[1].key == "a")
        #expect(updated.child("a").value == 0)
        #expect(updated.childCount == 402)
    }
}
