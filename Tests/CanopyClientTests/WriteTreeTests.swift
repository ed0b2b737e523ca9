// WriteTreeTests -- pending writes layered over server data: sets below/above, merges, removal = rollback.

import CanopyCore
import Testing

@testable import CanopyClient

@Suite struct WriteTreeTests {
    func node(_ json: JSONValue) -> Node { (try? Node.from(json: json)) ?? .empty }
    func path(_ text: String) -> Path { (try? Path(parsing: text)) ?? .root }
    func set(_ id: Int64, _ at: String, _ json: JSONValue) -> UserWrite {
        UserWrite(id: id, path: path(at), change: .set(node(json)), wire: json)
    }
    func merge(_ id: Int64, _ at: String, _ entries: [(String, JSONValue)]) -> UserWrite {
        UserWrite(
            id: id, path: path(at), change: .merge(entries.map { (path($0.0), node($0.1)) }),
            wire: .object(entries.map { JSONMember($0.0, $0.1) }))
    }

    @Test func layersWritesInOrderAtAboveAndBelowTheLocation() {
        var tree = WriteTree()
        let server = node(["title": "A", "body": "x"])
        tree.append(set(1, "/doc/title", "B"))
        #expect(tree.overlay(server, at: path("/doc")) == node(["title": "B", "body": "x"]))
        tree.append(set(2, "/", ["doc": ["title": "C"], "other": 1]))
        #expect(tree.overlay(server, at: path("/doc")) == node(["title": "C"]))
        tree.append(merge(3, "/doc", [("meta/tags", ["t"]), ("title", .null)]))
        #expect(tree.overlay(server, at: path("/doc")) == node(["meta": ["tags": ["t"]]]))
        #expect(tree.overlay(.empty, at: path("/elsewhere")) == .empty)
        // Rejecting the root set rolls it back: the others still layer over the server value.
        tree.remove(2)
        #expect(tree.overlay(server, at: path("/doc")) == node(["body": "x", "meta": ["tags": ["t"]]]))
        #expect(tree.userWriteCount == 2)
    }

    @Test func knowsWhenASetDeterminesALocation() {
        var tree = WriteTree()
        tree.append(set(1, "/a/b", 1))
        tree.append(merge(2, "/m", [("x/y", 2)]))
        #expect(tree.determines(path("/a/b")))
        #expect(tree.determines(path("/a/b/c")))
        #expect(!tree.determines(path("/a")))
        #expect(tree.determines(path("/m/x/y")))
        #expect(!tree.determines(path("/m/x")))
        #expect(tree.touches(path("/a")) && tree.touches(path("/m/x")) && !tree.touches(path("/z")))
    }

    static let incrementCases: [(JSONValue, Bool)] = [
        ([".sv": ["increment": 1]], true),
        (["a": ["b": [".sv": ["increment": 2.5]]]], true),
        ([".sv": "timestamp"], false),
        (["a": 1, "b": [1, 2]], false),
    ]

    @Test(arguments: incrementCases)
    func detectsIncrements(json: JSONValue, expected: Bool) {
        #expect(UserWrite.containsIncrement(json) == expected)
    }

    /// The batched overlay equals applying every write in order to a whole tree, for random writes.
    @Test(arguments: 0..<20)
    func overlayMatchesSequentialApplication(seed: Int) {
        var random = SplitMix64(seed: UInt64(seed))
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        func randomPath() -> Path { Path(segments: (0..<Int(random.next() % 4)).map { _ in pick(["a", "b", "c"]) }) }
        func randomValue() -> JSONValue {
            pick([.null, 1, "x", ["a": 2], ["b": ["c": 3], "a": nil], [:], true])
        }
        var tree = WriteTree()
        var reference = node(["a": ["a": 1, "b": ["c": "s"]], "b": 7, "c": ["a": ["b": 1]]])
        let base = reference
        for id in 1...Int64(12) {
            let target = randomPath()
            if random.next() % 3 == 0 {
                let entries = (0..<Int(1 + random.next() % 3)).map { _ in
                    (Path(segments: [pick(["a", "b", "c"])] + (random.next() % 2 == 0 ? [pick(["a", "b"])] : [])), node(randomValue()))
                }
                tree.append(UserWrite(id: id, path: target, change: .merge(entries), wire: .null))
                for entry in entries { reference = reference.setting(entry.1, at: target.appending(entry.0)) }
            } else {
                let value = node(randomValue())
                tree.append(UserWrite(id: id, path: target, change: .set(value), wire: .null))
                reference = reference.setting(value, at: target)
            }
        }
        for _ in 0..<10 {
            let location = randomPath()
            #expect(tree.overlay(base.node(at: location), at: location) == reference.node(at: location))
        }
    }
}
