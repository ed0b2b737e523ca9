// NodeReuseTests -- a written node keeps the stored instances of what it does not change (Node+Reuse).

import Testing

@testable import CanopyCore

@Suite struct NodeReuseTests {
    static func tree(_ json: JSONValue) -> Node { try! Node.from(json: json) }

    @Test func theSameDataWrittenAgainIsTheStoredInstance() {
        let stored = Self.tree(["a": ["x": 1, "y": "two"], "b": [".value": true, ".priority": 3]])
        let written = Self.tree(["a": ["x": 1, "y": "two"], "b": [".value": true, ".priority": 3]])
        #expect(written !== stored)
        #expect(written.reusing(stored) === stored)
        #expect(Node.empty.reusing(stored) === Node.empty)
        #expect(written.reusing(.empty) === written)
    }

    @Test func aChangedLeafIsNewAndItsSiblingsAreTheStoredOnes() {
        let stored = Self.tree(["a": ["x": 1, "y": "two"], "b": ["c": false], "d": "gone"])
        let written = Self.tree(["a": ["x": 1, "y": "three"], "b": ["c": false], "e": "new"])
        let result = written.reusing(stored)
        #expect(result.hasSameData(as: written))
        #expect(result !== stored)
        #expect(result.child("b") === stored.child("b"))
        #expect(result.child("a") !== stored.child("a"))
        #expect(result.child("a").child("x") === stored.child("a").child("x"))
        #expect(result.child("a").child("y") === written.child("a").child("y"))
        #expect(result.child("e") === written.child("e"))
    }

    @Test func onlyExactlyTheSameValuesAreReused() {
        // 1 and 1.0 are equal to Firebase, but the write's own spelling is kept; so is a priority change.
        let stored = Self.tree(["n": 1, "p": [".value": "v", ".priority": 1], "s": "é"])
        let written = Self.tree(["n": 1.0, "p": [".value": "v", ".priority": 2], "s": "e\u{301}"])
        let result = written.reusing(stored)
        #expect(result.child("n") === written.child("n"))
        #expect(result.child("p") === written.child("p"))
        #expect(result.child("s") === written.child("s"))
        #expect(result === written)
        // A node whose priority changed keeps the stored children.
        let withPriority = Self.tree(["a": ["x": 1], "b": 2, ".priority": 5])
        let withoutPriority = Self.tree(["a": ["x": 1], "b": 2])
        let reused = withPriority.reusing(withoutPriority)
        #expect(reused !== withoutPriority && reused !== withPriority)
        #expect(reused.priority == 5 && reused.hasSameData(as: withPriority))
        #expect(reused.child("a") === withoutPriority.child("a") && reused.child("b") === withoutPriority.child("b"))
    }

    @Test func longChildListsAreWalkedSideBySide() {
        // More children than one B+tree leaf holds, keys missing on either side, numeric keys first.
        var rng = SplitMix64(seed: 7)
        for round in 0..<20 {
            var storedMembers: [JSONMember] = []
            var writtenMembers: [JSONMember] = []
            for i in 0..<300 {
                let key = i % 7 == 0 ? String(i) : "k\(i)"
                let value: JSONValue = ["v": .int(Int64(i)), "w": .string("row \(i)")]
                let roll = rng.next() % 10
                if roll != 0 { storedMembers.append(JSONMember(key, value)) }
                if roll != 1 {
                    let changed = rng.next() % 10 == 0
                    writtenMembers.append(JSONMember(key, changed ? ["v": .int(Int64(i + round + 1))] : value))
                }
            }
            let stored = Self.tree(.object(storedMembers))
            let written = Self.tree(.object(writtenMembers))
            let result = written.reusing(stored)
            #expect(result.hasSameData(as: written) && result.childKeys == written.childKeys)
            for (key, node) in result.children {
                let old = stored.child(key)
                if !old.isEmpty && old.hasSameData(as: node) {
                    #expect(node === old, "round \(round) key \(key)")
                } else {
                    #expect(node === written.child(key), "round \(round) key \(key)")
                }
            }
        }
    }
}
