// NodeHashTests -- the Firebase wire hash (Protocol.md#Hashes) against worked vectors and hand-computed SHA-1 texts.

import Dispatch
import Synchronization
import Testing

@testable import CanopyCore

@Suite struct NodeHashTests {
    @Test func emptyHashAndETag() {
        #expect(Node.empty.hash == "")
        #expect(Node.empty.etag == "null_etag")
    }

    @Test(arguments: [
        (JSONValue.int(10), "+r5aI9HvKKagELki8SYKBk0q7D4="),
        (.int(1), "YPVfR2bXt/lcDjiQZ8pOkAd3qkQ="),
        (.double(1.0), "YPVfR2bXt/lcDjiQZ8pOkAd3qkQ="),
        (.bool(true), "E5z61QM0lN/U2WsOnusszCTkR8M="),
    ])
    func documentedLeafVectors(_ json: JSONValue, _ expected: String) throws {
        #expect(try node(json).hash == expected)
    }

    @Test func documentedTreeVectors() throws {
        let b = obj((".value", .string("x")), (".priority", .int(5)))
        #expect(try node(b).hash == "r7F6VPxCzGOC+y8S8XLO1QeQxfY=")
        #expect(try node(obj(("a", .int(1)), ("b", b), ("c", .bool(true)))).hash == "lCvRW0WPLtqcHviu5R5w0vNIx/4=")
        #expect(
            try node(obj(("a", .int(1)), ("b", b), (".priority", .string("p")))).hash
                == "jnVTxAqgGAsbUdh/tnmD3KsKS3Y=")
        #expect(try node(obj(("a", .int(1)), ("10", .int(1)), ("2", .int(1)))).hash == "3Cw5i6/5RxJXNXczNNSVapD1KU4=")
    }

    @Test func leafTextsByHand() throws {
        #expect(try node(.string("hello")).hash == Hash.sha1Base64("string:hello"))
        #expect(try node(.bool(false)).hash == Hash.sha1Base64("boolean:false"))
        #expect(try node(.double(0.1)).hash == Hash.sha1Base64("number:3fb999999999999a"))
        #expect(try node(.double(-2.5)).hash == Hash.sha1Base64("number:c004000000000000"))
        #expect(try node(.int(0)).hash == Hash.sha1Base64("number:0000000000000000"))
        #expect(try node(.double(-0.0)).hash == Hash.sha1Base64("number:8000000000000000"))
        let withStringPriority = try node(obj((".value", .double(2.5)), (".priority", .string("high"))))
        #expect(withStringPriority.hash == Hash.sha1Base64("priority:string:high:number:4004000000000000"))
    }

    @Test func priorityOrderOfChildren() throws {
        // No priority first (key order), then numeric priorities, then string priorities, ties by key.
        let tree = try node(
            obj(
                ("a", obj((".value", .int(1)), (".priority", .string("s")))),
                ("b", obj((".value", .int(1)), (".priority", .int(2)))),
                ("c", obj((".value", .int(1)), (".priority", .double(1.5)))),
                ("d", .int(1)),
                ("e", obj((".value", .int(1)), (".priority", .int(2))))))
        let order = ["d", "c", "b", "e", "a"]
        let text = order.map { ":\($0):" + tree.child($0).hash }.joined()
        #expect(tree.hash == Hash.sha1Base64(text))
        #expect(tree.childrenInPriorityOrder().map(\.key) == order)
    }

    @Test func hashChangesWithData() throws {
        let a = try node(obj(("x", .int(1))))
        #expect(a.hash != a.setting(Node(leaf: .int(2)), at: Path(segments: ["x"])).hash)
        #expect(a.hash != a.withPriority(.int(1)).hash)
        #expect(a.etag == a.hash)
        #expect(a.hash.utf8.count == 28)
        // Cached values are stable.
        #expect(a.hash == a.hash)
    }

    @Test func sha1Vector() {
        // SHA-1("abc") = a9993e36 4706816a ba3e2571 7850c26c 9cd0d89d.
        #expect(Hash.sha1Base64("abc") == "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=")
    }

    @Test func threadsRacingToHashOneTreeAllGetTheSameHash() throws {
        // Each round a fresh tree, hashed from several threads at once: the first hash kept wins, every reader
        // gets the same text, and the losers' copies are released (the address sanitizer of the fuzz build and
        // the leak checks would see a lost or doubly released box).
        for round in 0..<50 {
            let tree = try node(
                .object((0..<40).map { JSONMember("k\($0)", .object([JSONMember("v", .int(Int64(round * 100 + $0)))])) }))
            let expected = try node(
                .object((0..<40).map { JSONMember("k\($0)", .object([JSONMember("v", .int(Int64(round * 100 + $0)))])) }))
                .hash
            let seen = Mutex<Set<String>>([])
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                let hash = tree.hash
                seen.withLock { _ = $0.insert(hash) }
            }
            #expect(seen.withLock { $0 } == [expected])
            #expect(tree.isHashCached)
        }
    }

    @Test func sameDataAgreesWithTheHashWithoutComputingIt() throws {
        var rng = SeededGenerator(seed: 77)
        var equalPairs = 0
        for round in 0..<3000 {
            let json = NodeJSONTests.randomJSON(&rng, depth: 0)
            guard let a = try? Node.from(json: json) else { continue }
            // Half the time an independent copy of the same data, otherwise another random value.
            let other = round % 2 == 0 ? json : NodeJSONTests.randomJSON(&rng, depth: 0)
            guard let b = try? Node.from(json: other) else { continue }
            let same = a.hasSameData(as: b)
            if a.hasChildren && b.hasChildren {  // fresh instances (leaves may be shared, hashed earlier)
                #expect(!a.isHashCached && !b.isHashCached, "no hash computed")
            }
            #expect(same == (a.hash == b.hash), "\(json) vs \(other)")
            // Once both hashes are cached they decide.
            #expect(a.hasSameData(as: b) == same)
            if same { equalPairs += 1 }
        }
        #expect(equalPairs > 500)
        let item = try node(obj(("title", .string("Doors")), ("order", .int(1))))
        #expect(item.hasSameData(as: item))
        #expect(!item.hasSameData(as: item.withPriority(.int(1))))
        let reordered = try node(obj(("order", .double(1)), ("title", .string("Doors"))))
        #expect(item.hasSameData(as: reordered))  // 1 and 1.0 hash alike
        #expect(!Node(leaf: .double(0)).hasSameData(as: Node(leaf: .double(-0.0))))  // their hashes differ
        #expect(Node(leaf: .int(1 << 53 + 1)).hasSameData(as: Node(leaf: .int(1 << 53))))  // one double
    }

    @Test func aNodeFoundEqualToAHashedOneKeepsItsHash() throws {
        // `y` is a subtree: a record's leaves are packed and made anew on every read (PackedChildren).
        let json: JSONValue = ["a": ["x": 1, "y": ["z": "two"]], "b": [".value": true, ".priority": 3]]
        let hashed = try Node.from(json: json)
        let expected = hashed.hash
        let copy = try Node.from(json: json)
        #expect(!copy.isHashCached)
        #expect(copy.hasSameData(as: hashed))
        // Adopted at every level, and the same text a computation gives.
        #expect(copy.isHashCached && copy.child("a").isHashCached && copy.child("a").child("y").isHashCached)
        let a = try Node.from(json: ["x": 1, "y": ["z": "two"]])
        #expect(copy.hash == expected && copy.child("a").hash == a.hash)
        // Either side gives it to the other; a different node gets nothing.
        let other = try Node.from(json: json)
        #expect(hashed.hasSameData(as: other) && other.isHashCached)
        let different = try Node.from(json: ["a": ["x": 1, "y": ["z": "two"]], "b": [".value": true, ".priority": 4]])
        #expect(!different.hasSameData(as: hashed))
        #expect(!different.isHashCached && !different.child("b").isHashCached)
        #expect(different.child("a").isHashCached)  // an equal child found on the way adopted it
        // Two unhashed equal nodes compute nothing.
        let first = try Node.from(json: json)
        let second = try Node.from(json: json)
        #expect(first.hasSameData(as: second) && !first.isHashCached && !second.isHashCached)
    }
}
