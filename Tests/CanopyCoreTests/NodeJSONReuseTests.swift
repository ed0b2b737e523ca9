// NodeJSONReuseTests -- a written value keeps the stored instances of what it does not change
// (`Node.from(json:at:reusing:)`).

import Testing

@testable import CanopyCore

@Suite struct NodeJSONReuseTests {
    static func tree(_ json: JSONValue) -> Node { try! Node.from(json: json) }
    static func written(_ json: JSONValue, over stored: Node) -> Node { try! Node.from(json: json, reusing: stored) }

    @Test func theSameDataWrittenAgainIsTheStoredInstance() {
        let json: JSONValue = ["a": ["x": 1, "y": "two"], "b": [".value": true, ".priority": 3], "c": [1, 2]]
        let stored = Self.tree(json)
        #expect(Self.written(json, over: stored) === stored)
        #expect(Self.written(.null, over: stored) === Node.empty)
        #expect(Self.written(json, over: .empty) == stored)
        // The same data in another member order.
        let reordered: JSONValue = ["c": [1, 2], "b": [".priority": 3, ".value": true], "a": ["y": "two", "x": 1]]
        #expect(Self.written(reordered, over: stored) === stored)
    }

    @Test func aChangedLeafIsNewAndItsSiblingsAreTheStoredOnes() {
        // `x` is a subtree: a record's leaves are packed and have no identity (PackedChildrenTests).
        let stored = Self.tree(["a": ["x": ["v": 1], "y": "two"], "b": ["c": false], "d": "gone"])
        let json: JSONValue = ["a": ["x": ["v": 1], "y": "three"], "b": ["c": false], "e": "new"]
        let result = Self.written(json, over: stored)
        #expect(result == Self.tree(json))
        #expect(result !== stored)
        #expect(result.child("b") === stored.child("b"))
        #expect(result.child("a") !== stored.child("a"))
        #expect(result.child("a").child("x") === stored.child("a").child("x"))
        #expect(result.child("a").child("y").value == "three")
    }

    @Test func onlyExactlyTheSameValuesAreReused() {
        // 1 and 1.0 are equal to Firebase, but the write's own spelling is kept; so are changed priorities and
        // canonically equivalent but different strings.
        let stored = Self.tree(["n": 1, "p": [".value": "v", ".priority": 1], "s": "é"])
        let result = Self.written(["n": 1.0, "p": [".value": "v", ".priority": 2], "s": "e\u{301}"], over: stored)
        #expect(result.child("n") !== stored.child("n") && result.child("n").value == .double(1))
        #expect(result.child("p") !== stored.child("p") && result.child("p").priority == 2)
        #expect(result.child("s") !== stored.child("s"))
        // A node whose priority changed is new, its children are the stored ones.
        let plain = Self.tree(["a": ["x": 1], "b": 2])
        let prioritised = Self.written(["a": ["x": 1], "b": 2, ".priority": 5], over: plain)
        #expect(prioritised !== plain && prioritised.priority == 5)
        // "b", a plain leaf, is packed and has no identity of its own (PackedChildren).
        #expect(prioritised.child("a") === plain.child("a") && prioritised.child("b") == plain.child("b"))
        // A leaf with a priority is not reused for the same leaf without one.
        let withPriority = Self.tree(["k": [".value": "v", ".priority": 1]])
        #expect(Self.written(["k": "v"], over: withPriority).child("k").priority == nil)
    }

    @Test func arraysAndLongChildListsReuseTheirUnchangedElements() {
        var rng = SplitMix64(seed: 7)
        for round in 0..<20 {
            var storedRows: [JSONValue] = []
            var writtenRows: [JSONValue] = []
            for i in 0..<300 {
                let row: JSONValue = ["v": .int(Int64(i)), "w": .string("row \(i)")]
                storedRows.append(row)
                writtenRows.append(rng.next() % 10 == 0 ? ["v": .int(Int64(i + round + 1))] : row)
            }
            if rng.next() % 2 == 0 { writtenRows.removeLast(rng.next(below: 5)) }
            let stored = Self.tree(.array(storedRows))
            let result = Self.written(.array(writtenRows), over: stored)
            #expect(result == Self.tree(.array(writtenRows)), "round \(round)")
            for (key, node) in result.children {
                let old = stored.child(key)
                #expect((node === old) == (node == old), "round \(round) row \(key)")
            }
        }
    }

    @Test func invalidDataIsRefusedWhateverIsStored() {
        let stored = Self.tree(["a": ["b": 1]])
        #expect(throws: DataError.self) { try Node.from(json: ["a": ["b": 1, "bad/key": 2]], reusing: stored) }
        #expect(throws: DataError.self) { try Node.from(json: ["a": ["b": .double(.infinity)]], reusing: stored) }
    }
}
