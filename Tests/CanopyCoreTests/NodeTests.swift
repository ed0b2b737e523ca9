// NodeTests -- construction, lookup, ordering of children, updates, pruning and equality of the data tree.

import Testing

@testable import CanopyCore

@Suite struct NodeTests {
    @Test func emptyNode() {
        #expect(Node.empty.isEmpty)
        #expect(!Node.empty.isLeaf)
        #expect(Node.empty.childCount == 0)
        #expect(Node.empty.child("a").isEmpty)
        #expect(Node(leaf: .null).isEmpty)
        #expect(Node(leaf: .null) == .empty)
        #expect(Node.empty.withPriority(.int(1)).priority == nil)
    }

    @Test func leaves() {
        let n = Node(leaf: .string("x"), priority: .int(5))
        #expect(n.isLeaf && !n.isEmpty)
        #expect(render(n.value) == "\"x\"")
        #expect(render(n.priority) == "5")
        #expect(render(n.child(".priority").value) == "5")
        #expect(n.child("a").isEmpty)
        #expect(Node(leaf: .int(1)) == Node(leaf: .double(1)))
        #expect(Node(leaf: .int(1)) != Node(leaf: .string("1")))
        #expect(Node(leaf: .int(1)) != Node(leaf: .int(1), priority: .int(1)))
        #expect(Node(leaf: .string("é")) != Node(leaf: .string("e\u{301}")))
    }

    @Test func childrenAreInFirebaseKeyOrder() throws {
        let n = try node(obj(("b", .int(1)), ("10", .int(1)), ("a", .int(1)), ("2", .int(1)), ("007", .int(1))))
        #expect(n.childKeys == ["2", "007", "10", "a", "b"])
        #expect(n.children.map(\.key) == n.childKeys)
        for key in n.childKeys { #expect(n.hasChild(key)) }
        #expect(!n.hasChild("7"))
        #expect(n.child("7").isEmpty)
        #expect(render(n.child("007").value) == "1")
    }

    @Test func childrenInitializerSortsAndDropsEmpty() {
        let n = Node(children: [("b", Node(leaf: .int(2))), ("a", Node(leaf: .int(1))), ("c", .empty)])
        #expect(n.childKeys == ["a", "b"])
        #expect(Node(children: [("c", Node.empty)], priority: .int(1)).isEmpty)
        #expect(Node(children: [("c", Node.empty)], priority: .int(1)).priority == nil)
    }

    @Test func nodeAtPath() throws {
        let n = try node(obj(("a", obj(("b", obj(("c", .bool(true))))))))
        #expect(render(n.node(at: Path(segments: ["a", "b", "c"])).value) == "true")
        #expect(n.node(at: Path(segments: ["a", "x", "c"])).isEmpty)
        #expect(n.node(at: .root) === n)
        #expect(n.node(at: Path(segments: ["a", "b", "c", "d"])).isEmpty)
    }

    @Test func settingSharesUntouchedSubtrees() throws {
        // `x` is a subtree, not a leaf: a record's leaves are packed and have no identity (PackedChildren).
        let n = try node(obj(("a", obj(("x", obj(("deep", .int(1)))))), ("b", obj(("y", .int(2))))))
        let updated = n.setting(Node(leaf: .int(3)), at: Path(segments: ["a", "z"]))
        #expect(updated.child("b") === n.child("b"))
        #expect(updated.node(at: Path(segments: ["a", "x"])) === n.node(at: Path(segments: ["a", "x"])))
        #expect(render(updated.node(at: Path(segments: ["a", "z"])).value) == "3")
        #expect(render(n.node(at: Path(segments: ["a", "z"])).value) == "nil")  // the original is untouched
    }

    @Test func settingAtRootReplaces() throws {
        let n = try node(obj(("a", .int(1))))
        let replacement = Node(leaf: .string("r"))
        #expect(n.setting(replacement, at: .root) === replacement)
    }

    @Test func settingThroughALeafReplacesIt() throws {
        let n = try node(obj(("a", .int(1))))
        let updated = n.setting(Node(leaf: .int(2)), at: Path(segments: ["a", "b"]))
        #expect(updated.child("a").childKeys == ["b"])
        #expect(updated.child("a").value == nil)
    }

    @Test func deletingLastChildPrunesAncestors() throws {
        let n = try node(obj(("a", obj(("b", obj(("c", .int(1)))))), ("z", .int(0))))
        let updated = n.setting(.empty, at: Path(segments: ["a", "b", "c"]))
        #expect(updated.childKeys == ["z"])
        let all = updated.setting(.empty, at: Path(segments: ["z"]))
        #expect(all.isEmpty)
        #expect(all.json().isNullForTest)
    }

    @Test func deletingMissingPathIsANoOp() throws {
        let n = try node(obj(("a", .int(1))))
        #expect(n.setting(.empty, at: Path(segments: ["x", "y"])) === n)
    }

    @Test func priorityOnlyWrites() throws {
        let n = try node(obj(("a", obj(("b", .int(1))))))
        let path = try Path(parsing: "/a/.priority", allowPriorityLeaf: true)
        let p = try Node.from(json: .int(7), at: path)
        let updated = n.setting(p, at: path)
        #expect(render(updated.child("a").priority) == "7")
        #expect(render(updated.node(at: Path(segments: ["a", "b"])).value) == "1")
        // Clearing the priority.
        let cleared = updated.setting(try Node.from(json: .null, at: path), at: path)
        #expect(cleared.child("a").priority == nil)
        #expect(cleared == n)
        // A priority on an absent node changes nothing.
        let absent = try Path(parsing: "/missing/.priority", allowPriorityLeaf: true)
        #expect(n.setting(p, at: absent) === n)
        // A priority path refuses non-priority values.
        #expect(throws: DataError(.invalidPriority, atText: "/a/.priority")) {
            try Node.from(json: .bool(true), at: path)
        }
        #expect(throws: DataError.self) { try Node.from(json: obj(("x", .int(1))), at: path) }
    }

    @Test func leafPriorityViaSettingChild() {
        let leaf = Node(leaf: .int(1))
        let p = leaf.settingChild(".priority", Node(leaf: .string("p")))
        #expect(render(p.priority) == "\"p\"")
        #expect(render(p.value) == "1")
        // Adding a child to a leaf keeps its priority and drops its value.
        let grown = p.settingChild("k", Node(leaf: .bool(false)))
        #expect(grown.value == nil && grown.childKeys == ["k"] && render(grown.priority) == "\"p\"")
        // Removing the last child drops the priority with the node.
        #expect(grown.settingChild("k", .empty) === Node.empty)
    }

    @Test func structuralEquality() throws {
        let a = try node(obj(("x", .int(1)), ("y", obj(("z", .string("s"))))))
        let b = try node(obj(("y", obj(("z", .string("s")))), ("x", .double(1))))
        #expect(a == b)
        let c = try node(obj(("x", .int(1)), ("y", obj(("z", .string("t"))))))
        #expect(a != c)
        #expect(a != a.withPriority(.int(1)))
        #expect(a.withPriority(.int(1)) == b.withPriority(.double(1)))
        #expect(try node(obj(("é", .int(1)))) != node(obj(("e\u{301}", .int(1)))))
    }

    @Test func manyChildrenStaySorted() {
        var n = Node.empty
        var rng = SeededGenerator(seed: 1)
        var keys: [String] = []
        for _ in 0..<500 {
            let key = Bool.random(using: &rng) ? String(Int.random(in: -50...500, using: &rng)) : "k\(rng.next() % 300)"
            keys.append(key)
            n = n.settingChild(key, Node(leaf: .string(key)))
        }
        let unique = Array(Set(keys))
        #expect(n.childKeys == unique.sorted { compareKeys($0, $1) < 0 })
        for key in unique { #expect(render(n.child(key).value) == "\"\(key)\"") }
        for key in unique.prefix(250) { n = n.settingChild(key, .empty) }
        #expect(n.childCount == unique.count - 250)
    }
}

extension JSONValue {
    var isNullForTest: Bool {
        if case .null = self { return true }
        return false
    }
}
