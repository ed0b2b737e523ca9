// PackedChildrenTests -- a child list with its leaves packed in one array reads, searches, changes, compares and
// serializes exactly like the same children as nodes; children kept as nodes keep their identity.

import Testing

@testable import CanopyCore

@Suite struct PackedChildrenTests {
    /// Keys that exercise Firebase order: integer-like (negative, leading zeros, beyond Int32), non-ASCII,
    /// a supplementary-plane character against U+E000–U+FFFF, and the longest key.
    static let keyPool = [
        "0", "1", "-1", "007", "7", "10", "2147483647", "2147483648", "-2147483648", "a", "B", "b", "é", "e\u{301}",
        "\u{1F600}", "\u{FFFD}", "key with spaces", String(repeating: "k", count: Key.maxBytes),
    ]

    /// A random primitive, spelled in every way a leaf can be.
    static func randomValue(_ rng: inout SplitMix64) -> JSONValue {
        switch Int.random(in: 0..<9, using: &rng) {
        case 0: return .bool(Bool.random(using: &rng))
        case 1: return .int(Int64.random(in: Int64.min...Int64.max, using: &rng))
        case 2: return .int(Int64.random(in: -3...3, using: &rng))
        case 3:
            let doubles: [Double] = [-0.0, 0.0, 1.0, -2.5, 1e300, .leastNonzeroMagnitude, .pi]
            return .double(doubles[Int.random(in: 0..<doubles.count, using: &rng)])
        case 4: return .string("")
        case 5: return .string(String(repeating: "x", count: Int.random(in: 1...2_000, using: &rng)))
        case 6: return .string("é\u{1F600}\u{0}\"\\")
        case 7: return .string(String(repeating: "y", count: 70_000))
        default: return .string("v\(rng.next() % 1000)")
        }
    }

    /// Random leaves, sorted, distinct keys.
    static func randomLeaves(_ rng: inout SplitMix64, count: Int) -> [(key: String, node: Node)] {
        var keys = Set<String>()
        var pool = keyPool
        while keys.count < count {
            if pool.isEmpty || Bool.random(using: &rng) {
                keys.insert("k\(rng.next() % 100_000)")
            } else {
                keys.insert(pool.remove(at: Int.random(in: 0..<pool.count, using: &rng)))
            }
        }
        return keys.sorted { compareKeys($0, $1) < 0 }.map { key in
            // Mostly plain leaves, some kept as nodes: a leaf with a priority, an object.
            switch Int.random(in: 0..<8, using: &rng) {
            case 0: (key: key, node: Node(leaf: randomValue(&rng), priority: .string("p")))
            case 1: (key: key, node: Node(children: [(key: "deep", node: Node(leaf: randomValue(&rng)))], priority: 1))
            default: (key: key, node: Node(leaf: randomValue(&rng)))
            }
        }
    }

    static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool { JSONValue.identical(a, b) }

    @Test func packedChildrenReadExactlyLikeNodes() {
        var rng = SplitMix64(seed: 41)
        for round in 0..<300 {
            let leaves = Self.randomLeaves(&rng, count: Int.random(in: 1...NodeChildren.flatLimit, using: &rng))
            let packed = Node(validatedLeaf: nil, priority: nil, children: NodeChildren(packing: leaves))
            let flat = Node(validatedLeaf: nil, priority: nil, children: NodeChildren(sorted: leaves))
            let hasPlainLeaf = leaves.contains { $0.node.isLeaf && $0.node.priority == nil }
            #expect(packed.children.isPacked == hasPlainLeaf && !flat.children.isPacked)
            // A child kept as a node is the same instance.
            for (index, child) in leaves.enumerated() where child.node.hasChildren || child.node.priority != nil {
                #expect(packed.children[index].node === child.node && packed.child(child.key) === child.node)
            }
            #expect(packed.childCount == leaves.count)
            // Iterator, subscript and lookups by key give the same keys and values bit for bit.
            for (index, (element, expected)) in zip(packed.children, leaves).enumerated() {
                #expect(JSONKey.bytesEqual(element.key, expected.key))
                #expect(Self.same(element.node.value, expected.node.value), "round \(round), key \(expected.key)")
                #expect(JSONKey.bytesEqual(packed.children[index].key, expected.key))
                #expect(Self.same(packed.child(expected.key).value, expected.node.value))
                #expect(packed.child(expected.key) == expected.node)
            }
            // Absent keys are searched to the same position.
            for probe in Self.keyPool + ["k5", "zz", "-0", "00"] {
                let a = packed.children.slot(of: probe)
                let b = flat.children.slot(of: probe)
                #expect(a.found == b.found && a.position == b.position, "probe \(probe)")
            }
            // The same data to every reader: equality, hash, JSON.
            #expect(packed == flat && packed.hash == flat.hash && packed.hasSameData(as: flat))
            #expect(packed.json() == flat.json() && packed.json(export: true) == flat.json(export: true))
            for export in [false, true] {
                // Serialized from the packed bytes: the same text, byte for byte.
                var a: [UInt8] = []
                var b: [UInt8] = []
                packed.writeJSON(export: export, into: &a)
                flat.writeJSON(export: export, into: &b)
                #expect(a == b, "round \(round), export \(export)")
                let withPriority = Node(validatedLeaf: nil, priority: .string("q"), children: packed.children)
                var c: [UInt8] = []
                withPriority.writeJSON(export: export, into: &c)
                #expect(c == Array(withPriority.json(export: export).serialized().utf8))
            }
        }
        // Array-like keys are written as an array (REST) or an object (export), as for any node.
        let array = try! Node.from(json: ["0": "a", "1": 2, "2": true])
        #expect(array.children.isPacked)
        var plain: [UInt8] = []
        array.writeJSON(into: &plain)
        #expect(String(decoding: plain, as: UTF8.self) == #"["a",2,true]"#)
        var exported: [UInt8] = []
        array.writeJSON(export: true, into: &exported)
        #expect(String(decoding: exported, as: UTF8.self) == #"{"0":"a","1":2,"2":true}"#)
    }

    @Test func changingAPackedRecordUnpacksItAndKeepsEverythingElse() {
        var rng = SplitMix64(seed: 5)
        for _ in 0..<200 {
            let leaves = Self.randomLeaves(&rng, count: Int.random(in: 1...20, using: &rng))
            var packed = Node(validatedLeaf: nil, priority: nil, children: NodeChildren(packing: leaves))
            var flat = Node(validatedLeaf: nil, priority: nil, children: NodeChildren(sorted: leaves))
            for _ in 0..<6 {
                let key =
                    Bool.random(using: &rng)
                    ? leaves[Int.random(in: 0..<leaves.count, using: &rng)].key : "new\(rng.next() % 5)"
                let value: Node =
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: .empty
                    case 1: Node(children: [(key: "deep", node: Node(leaf: 1))])
                    case 2: Node(leaf: "p", priority: 2)
                    default: Node(leaf: Self.randomValue(&rng))
                    }
                let before = packed
                packed = packed.settingChild(key, value)
                flat = flat.settingChild(key, value)
                #expect(packed == flat && packed.hash == flat.hash)
                #expect(packed.json(export: true) == flat.json(export: true))
                // Changed: unpacked (the next load packs it again). Unchanged (an absent key removed): the same.
                let isPacked = packed.children.isPacked
                #expect(packed === before ? isPacked == before.children.isPacked : !isPacked)
            }
        }
        // Removing the only leaf leaves the empty node.
        let one = Node(
            validatedLeaf: nil, priority: nil, children: NodeChildren(packing: [(key: "a", node: Node(leaf: 1))]))
        #expect(one.settingChild("a", .empty).isEmpty)
    }

    /// A list longer than `flatLimit` is a tree whose leaves are packed one by one: it reads, searches, compares and
    /// serializes like the same children as nodes, and a change unpacks the one leaf it touches.
    @Test func longListsPackEachLeafAndReadAndChangeLikeNodes() {
        var rng = SplitMix64(seed: 77)
        for round in 0..<24 {
            let count = Int.random(in: (NodeChildren.flatLimit + 1)...1_500, using: &rng)
            // Short values (`randomValue` makes strings of up to 70,000 bytes): the list is what is tested.
            var leaves = Self.randomLeaves(&rng, count: count).map { leaf in
                guard leaf.node.isLeaf, leaf.node.priority == nil, case .string(let text)? = leaf.node.value,
                    text.utf8.count > 40
                else { return leaf }
                return (key: leaf.key, node: Node(leaf: .string(String(text.prefix(40)))))
            }
            if round % 4 == 0 { leaves = leaves.map { ($0.key, Node(leaf: .bool(true))) } }  // flags only
            var packed = Node(validatedLeaf: nil, priority: nil, children: NodeChildren(packing: leaves))
            var flat = Node(validatedLeaf: nil, priority: nil, children: NodeChildren(sorted: leaves))
            let leafCount = packed.children.chunkCount
            #expect(leafCount > 1 && packed.children.packedLeafCount == leafCount, "round \(round)")
            #expect(flat.children.packedLeafCount == 0)
            #expect(packed.children.holdsExactly(leaves) && flat.children.holdsExactly(leaves))
            // One value changed, even only in its spelling (1 against 1.0): not the same children.
            var altered = leaves
            let victim = Int.random(in: 0..<count, using: &rng)
            let spelling: JSONValue = altered[victim].node.value == .int(1) ? .double(1) : .int(1)
            altered[victim].node = Node(leaf: Self.same(altered[victim].node.value, spelling) ? .int(1) : spelling)
            let holdsAltered = packed.children.holdsExactly(altered)
            #expect(!holdsAltered, "round \(round), victim \(victim) of \(count)")
            // Iterator, subscript, key(at:) and lookups by key give the same keys and values bit for bit.
            for (index, (element, expected)) in zip(packed.children, leaves).enumerated() {
                #expect(JSONKey.bytesEqual(element.key, expected.key) && Self.same(element.node.value, expected.node.value))
                #expect(JSONKey.bytesEqual(packed.children.key(at: index), expected.key))
                #expect(Self.same(packed.children[index].node.value, expected.node.value))
                #expect(packed.child(expected.key) == expected.node)
            }
            for probe in Self.keyPool + ["k5", "zz", "-0", "00", "k99999x", ""] {
                let a = packed.children.slot(of: probe)
                let b = flat.children.slot(of: probe)
                #expect(a.found == b.found && a.position == b.position, "probe \(probe)")
            }
            #expect(packed == flat && packed.hash == flat.hash && packed.hasSameData(as: flat))
            var a: [UInt8] = []
            var b: [UInt8] = []
            packed.writeJSON(export: true, into: &a)
            flat.writeJSON(export: true, into: &b)
            #expect(a == b)
            // Changes: inserts, replacements and removals, at the front, the back and in between.
            var keys = leaves.map(\.key)
            for step in 0..<40 {
                let key: String
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: key = keys[0]
                case 1: key = keys[keys.count - 1]
                case 2: key = "n\(rng.next() % 100_000)"
                default: key = keys[Int.random(in: 0..<keys.count, using: &rng)]
                }
                let value: Node = step % 3 == 2 ? .empty : Node(leaf: Self.randomValue(&rng))
                let packedLeavesBefore = packed.children.packedLeafCount
                packed = packed.settingChild(key, value)
                flat = flat.settingChild(key, value)
                if value.isEmpty { keys.removeAll { $0 == key } } else if !keys.contains(key) { keys.append(key) }
                keys.sort { compareKeys($0, $1) < 0 }
                // At most the leaf changed is unpacked (a removal can also drop an emptied packed leaf).
                #expect(packed.children.packedLeafCount >= packedLeavesBefore - 1)
                #expect(packed == flat, "round \(round), step \(step)")
                #expect(packed.children.map(\.key) == keys)
                #expect(packed.child(key) == value)
            }
            #expect(packed.hash == flat.hash && packed.json(export: true) == flat.json(export: true))
        }
    }

    @Test func loadedAndWrittenLongListsArePackedLeafByLeaf() throws {
        let flags = JSONValue.object((0..<1_000).map { JSONMember("f\($0)", .bool($0 % 3 == 0)) })
        let written = try Node.from(json: ["flags": flags, "rows": .object((0..<100).map { JSONMember("r\($0)", ["a": 1]) })])
        let builder = NodeBuilder()
        try written.forEachRecord(under: []) { try builder.add($0) }
        let loaded = builder.finish()
        for tree in [written, loaded] {
            #expect(tree == written)
            let list = tree.child("flags").children
            #expect(list.chunkCount > 1 && list.packedLeafCount == list.chunkCount)
            #expect(tree.child("rows").children.packedLeafCount == 0)  // objects only: nothing to pack
        }
        // Writing the same list again keeps the stored instance; a changed flag makes a new one.
        #expect(try Node.from(json: flags, reusing: loaded.child("flags")) === loaded.child("flags"))
        var changed = flags
        if case .object(var members) = changed {
            members[500] = JSONMember(members[500].key, .int(1))
            changed = .object(members)
        }
        let rewritten = try Node.from(json: changed, reusing: loaded.child("flags"))
        #expect(rewritten !== loaded.child("flags") && rewritten.child("f500") == Node(leaf: 1))
    }

    /// Every node holds a `NodeChildren`: packed storage must not make it larger than two words and a tag, or every
    /// node of every tree grows from a 64-byte heap block to an 80-byte one (it did, with a third word).
    @Test func packedStorageKeepsNodesSmall() {
        #expect(MemoryLayout<PackedChildren>.size == 16)
        #expect(MemoryLayout<NodeChildren>.size <= 17)
    }

    @Test func listsWithAPlainLeafUpToTheFlatLimitArePacked() {
        let leaf = Node(leaf: "x")
        let object = Node(children: [(key: "c", node: leaf)])
        func packs(_ list: [(key: String, node: Node)]) -> Bool { NodeChildren(packing: list).isPacked }
        #expect(packs([(key: "a", node: leaf)]))
        #expect(!packs([]))
        #expect(packs([(key: "a", node: leaf), (key: "b", node: Node(leaf: "y", priority: 1))]))
        #expect(packs([(key: "a", node: leaf), (key: "b", node: object)]))
        #expect(!packs([(key: "a", node: object), (key: "b", node: Node(leaf: "y", priority: 1))]))
        let many = (0..<NodeChildren.flatLimit + 1).map { (key: "k\($0)", node: leaf) }.sorted {
            compareKeys($0.key, $1.key) < 0
        }
        #expect(packs(Array(many.prefix(NodeChildren.flatLimit))) && !packs(many))
    }

    @Test func loadedAndWrittenRecordsArePacked() throws {
        let json: JSONValue = [
            "items": [
                "a": ["title": "Doors", "order": 1, "live": true], "b": ["title": "Talk", "at": 2.5, "c": ["d": 1]],
            ],
            "prioritised": [".priority": 1, "x": 1], "leafWithPriority": ["y": [".value": 1, ".priority": "p"]],
        ]
        let written = try Node.from(json: json)
        let builder = NodeBuilder()
        try written.forEachRecord(under: []) { try builder.add($0) }
        let loaded = builder.finish()
        for tree in [written, loaded] {
            #expect(tree == written)
            #expect(tree.child("items").child("a").children.isPacked)
            #expect(tree.child("items").child("b").children.isPacked)  // two leaves and an object
            #expect(!tree.child("items").children.isPacked)  // no leaf among its children
            // The node's own priority does not matter; a child's priority does.
            #expect(tree.child("prioritised").children.isPacked && tree.child("prioritised").priority == 1)
            #expect(!tree.child("leafWithPriority").children.isPacked)
        }
    }

    @Test func packedRecordsAreComparedByTheirBytesThenChildByChild() throws {
        let json: JSONValue = ["title": "Doors", "order": 1, "live": true, "o": ["p": "two"]]
        let a = try Node.from(json: json)
        #expect(a.children.isPacked)
        #expect(a.hasSameData(as: try Node.from(json: json)))
        // Packed alike byte for byte; only the child kept as a node differs.
        let nested = try Node.from(json: ["title": "Doors", "order": 1, "live": true, "o": ["p": "six"]])
        #expect(nested.children.isPacked && !a.hasSameData(as: nested) && a.hash != nested.hash)
        // Packed apart, yet the same data: 1 and 1.0 hash alike.
        let spelled = try Node.from(json: ["title": "Doors", "order": 1.0, "live": true, "o": ["p": "two"]])
        #expect(spelled.children.isPacked && a.hasSameData(as: spelled) && a.hash == spelled.hash)
        // A leaf of the same length that differs.
        let edited = try Node.from(json: ["title": "Doorz", "order": 1, "live": true, "o": ["p": "two"]])
        #expect(!a.hasSameData(as: edited))
    }

    @Test func writingARecordAgainKeepsTheStoredPackedInstance() throws {
        let stored = try Node.from(json: ["title": "Doors", "order": 1, "at": 2.5, "live": true, "o": ["p": 1]])
        #expect(stored.children.isPacked)
        let again = try Node.from(
            json: ["live": true, "at": 2.5, "order": 1, "title": "Doors", "o": ["p": 1]], reusing: stored)
        #expect(again === stored)
        // A changed leaf: the object kept as a node is still the stored instance.
        let changed = try Node.from(
            json: ["live": false, "at": 2.5, "order": 1, "title": "Doors", "o": ["p": 1]], reusing: stored)
        #expect(changed !== stored && changed.child("o") === stored.child("o"))
        // Equal to Firebase but spelled differently, or changed: a new record with the written data.
        for json: JSONValue in [
            ["title": "Doors", "order": 1.0, "at": 2.5, "live": true, "o": ["p": 1]],
            ["title": "Doors", "order": 1, "at": 2.5, "live": false, "o": ["p": 1]],
            ["title": "Door", "order": 1, "at": 2.5, "live": true, "o": ["p": 1]],
            ["title": "Doors", "order": 1, "at": 2.5, "o": ["p": 1]],
            ["title": "Doors", "order": 1, "at": 2.5, "live": true, "o": ["p": 1], "extra": 0],
            ["title": ["nested": "Doors"], "order": 1, "at": 2.5, "live": true, "o": ["p": 1]],
            ["title": "Doors", "order": 1, "at": 2.5, "live": true, "o": ["p": 1], ".priority": 1],
            ["title": "Doors", "order": 1, "at": 2.5, "live": true, "o": ["p": 2]],
            ["title": "Doors", "order": 1, "at": 2.5, "live": true, "o": "p"],
        ] {
            let result = try Node.from(json: json, reusing: stored)
            let fresh = try Node.from(json: json)
            #expect(result !== stored && result == fresh, "\(json)")
            #expect(result.json(export: true) == fresh.json(export: true))
        }
    }
}
