// NodeChildrenTests -- the flat list and the B+tree of children stay sorted and consistent through inserts and removals.

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

    @Test func largeListsAreTreesOfFullLeavesWhenBuiltOrAppended() {
        var rng = SeededGenerator(seed: 7)
        let keys = (0..<40_000).map { "k\($0)" }
        let sorted = keys.sorted { compareKeys($0, $1) < 0 }
        // Built whole: 625 leaves of 64 under 10 branches under the root.
        let built = Node(children: sorted.map { (key: $0, node: Node(leaf: 1)) })
        #expect(built.children.chunkCount == 625)
        #expect(built.children.depth == 2)
        // Inserted in random order: leaves split in halves, so they are between half full and full.
        var shuffled = Node.empty
        for key in keys.shuffled(using: &rng) { shuffled = shuffled.settingChild(key, Node(leaf: 1)) }
        check(shuffled, sorted)
        #expect((625...1_250).contains(shuffled.children.chunkCount))
        #expect(shuffled == built)
        #expect(shuffled.hash == built.hash)
        // Appended in key order (as pushes are): leaves stay full.
        var appended = Node.empty
        for key in sorted { appended = appended.settingChild(key, Node(leaf: 1)) }
        #expect(appended.children.chunkCount == 625)
        #expect(appended == built)
        // Removing most of it keeps it sorted and findable, and a small remainder is one array again.
        for key in keys.prefix(39_000) { shuffled = shuffled.settingChild(key, .empty) }
        check(shuffled, Array(keys.suffix(1_000)).sorted { compareKeys($0, $1) < 0 })
        for key in keys.suffix(1_000).dropFirst(20) { shuffled = shuffled.settingChild(key, .empty) }
        #expect(shuffled.children.depth == 0)
        check(shuffled, Array(keys.suffix(1_000).prefix(20)).sorted { compareKeys($0, $1) < 0 })
    }

    @Test func threeLevelTreesStayConsistentThroughInsertsAndRemovals() {
        // 270,000 children need three levels of branches (64 × 64 × 64 = 262,144 per two).
        var rng = SeededGenerator(seed: 3)
        // Zero-padded numbers sort as strings (a leading zero is not an integer key); every odd one is free.
        func padded(_ number: Int) -> String {
            let digits = String(number)
            return String(repeating: "0", count: 7 - digits.count) + digits
        }
        var keys = (0..<270_000).map { padded($0 * 2) }
        var node = Node(children: keys.map { (key: $0, node: Node(leaf: 1)) })
        #expect(node.children.depth == 3)
        var present = Set(keys)
        for round in 0..<3_000 {
            let key = padded(Int.random(in: 0..<540_002, using: &rng))
            if round % 3 == 2, let victim = present.randomElement(using: &rng) {
                node = node.settingChild(victim, .empty)
                present.remove(victim)
            } else {
                node = node.settingChild(key, Node(leaf: .int(Int64(round))))
                present.insert(key)
            }
        }
        // Each child is at its position in key order, by index, by iteration and by lookup.
        keys = present.sorted { compareKeys($0, $1) < 0 }
        let children = node.children
        #expect(children.count == keys.count)
        #expect(children.map(\.key) == keys)
        for position in stride(from: 0, to: keys.count, by: 997) {
            #expect(children[position].key == keys[position])
            #expect(node.hasChild(keys[position]))
        }
        #expect(children[keys.count - 1].key == keys.last)
        #expect(!node.hasChild("0000001"))
        // The front and the back, where first keys and appends change.
        let front = node.settingChild("-1", Node(leaf: 0)).settingChild("zz", Node(leaf: 0))
        #expect(front.children.first?.key == "-1")
        #expect(front.children.last?.key == "zz")
        #expect(front.children[1].key == keys[0])
        #expect(front.child("-1").value == 0)
        let trimmed = front.settingChild("-1", .empty).settingChild(keys[0], .empty)
        #expect(trimmed.children.first?.key == keys[1])
        #expect(trimmed.child(keys[1]).value != nil)
    }

    @Test func keysBeforeTheFirstChunkInsertAtTheFront() {
        let built = Node(children: (1000..<1400).map { (key: "k\($0)", node: Node(leaf: 1)) })
        let updated = built.settingChild("a", Node(leaf: 0)).settingChild("-5", Node(leaf: 0))
        #expect(updated.children.first?.key == "-5")
        #expect(updated.children[1].key == "a")
        #expect(updated.child("a").value == 0)
        #expect(updated.childCount == 402)
    }
    @Test func integerLikeKeysKeepFirebaseOrderThroughCachedValues() {
        // Searches compare cached integer values; ties on value fall back to length and code units.
        let tricky = [
            "0", "-0", "00", "007", "7", "-1", "-01", "2147483647", "2147483648", "-2147483648", "-2147483649", "a",
            "-", "-a", "1a", "01", "10", "9", "+1", "\u{E000}", "\u{1F600}", "Z", "0000000000007",
        ]
        var rng = SeededGenerator(seed: 5)
        var keys = tricky
        for i in 0..<200 { keys.append(String(Int.random(in: -50...50, using: &rng)) + (i % 3 == 0 ? "x" : "")) }
        keys = Array(Set(keys)).shuffled(using: &rng)
        var node = Node.empty
        for key in keys { node = node.settingChild(key, Node(leaf: .string(key))) }
        #expect(node.children.chunkCount > 1)
        check(node, keys.sorted { compareKeys($0, $1) < 0 })
        for key in keys { #expect(node.child(key).value == .string(key)) }
        for absent in ["000", "-00", "8", "b", "2147483646"] where !keys.contains(absent) {
            #expect(node.child(absent).isEmpty)
        }
    }
}
