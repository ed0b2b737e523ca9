// NodeJSONTests -- JSON input validation (keys, depth, sizes, metadata) and plain/export output of nodes.

import Testing

@testable import CanopyCore

@Suite struct NodeJSONTests {
    @Test func nullLikeInputIsEmpty() throws {
        for json: JSONValue in [
            .null, obj(), arr(), obj(("a", .null)), obj(("a", obj())), arr(.null, .null),
            obj((".priority", .int(1))), obj(("a", obj(("b", arr())))),
        ] {
            #expect(try node(json).isEmpty, "\(render(json))")
        }
    }

    @Test func arraysBecomeIndexedChildren() throws {
        let n = try node(arr(.string("a"), .null, .string("c")))
        #expect(n.childKeys == ["0", "2"])
        #expect(render(n.json()) == "[\"a\",null,\"c\"]")
        #expect(render(n.json(export: true)) == "{\"0\":\"a\",\"2\":\"c\"}")
    }

    @Test(arguments: [
        (obj(("0", .string("a")), ("2", .string("c"))), "[\"a\",null,\"c\"]"),
        (obj(("3", .string("x"))), "{\"3\":\"x\"}"),
        (obj(("0", .int(1)), ("1", .int(2))), "[1,2]"),
        (obj(("1", .int(1))), "[null,1]"),
        (obj(("2", .int(1))), "{\"2\":1}"),
        (obj(("1", .int(1)), ("3", .int(3))), "[null,1,null,3]"),
        (obj(("1", .int(1)), ("4", .int(4))), "{\"1\":1,\"4\":4}"),
        (obj(("01", .int(1))), "{\"01\":1}"),
        (obj(("0", .int(1)), ("-1", .int(1))), "{\"-1\":1,\"0\":1}"),
        (obj(("0", .int(1)), ("a", .int(1))), "{\"0\":1,\"a\":1}"),
        (
            obj(("0", .int(0)), ("10", .int(10)), ("5", .int(5)), ("7", .int(7)), ("9", .int(9))),
            "{\"0\":0,\"5\":5,\"7\":7,\"9\":9,\"10\":10}"
        ),
        (obj(("0", .int(0)), ("9999999999999999999999", .int(1))), "{\"0\":0,\"9999999999999999999999\":1}"),
    ])
    func arrayHeuristic(_ json: JSONValue, _ expected: String) throws {
        #expect(render(try node(json).json()) == expected)
    }

    @Test func exportRoundTrip() throws {
        // Protocol.md#Export-format.
        let exported = obj(
            (".priority", .string("p")), ("b", obj((".value", .int(1)), (".priority", .int(5)))), ("c", .string("x")))
        let n = try node(exported)
        #expect(render(n.priority) == "\"p\"")
        #expect(render(n.child("b").priority) == "5")
        #expect(render(n.json()) == "{\"b\":1,\"c\":\"x\"}")
        #expect(render(n.json(export: true)) == render(exported))
        #expect(try node(n.json(export: true)) == n)
    }

    @Test func valueWrapperForms() throws {
        #expect(render(try node(obj((".value", .bool(true)))).value) == "true")
        #expect(try node(obj((".value", .null), (".priority", .int(1)))).isEmpty)
        #expect(throws: DataError(.invalidValueWrapper, atText: "/")) {
            try node(obj((".value", .int(1)), ("a", .int(2))))
        }
        #expect(throws: DataError(.invalidValueWrapper, atText: "/x")) {
            try Node.from(json: obj((".value", obj(("a", .int(1))))), at: Path(segments: ["x"]))
        }
    }

    @Test func refusesBadKeysAndMetadata() throws {
        #expect(throws: DataError(.invalidKey, atText: "/a")) { try node(obj(("a", obj(("b$", .int(1)))))) }
        #expect(throws: DataError(.invalidKey, atText: "/")) { try node(obj((".foo", .int(1)))) }
        #expect(throws: DataError(.invalidKey, atText: "/")) { try node(obj(("", .int(1)))) }
        #expect(throws: DataError(.unresolvedServerValue, atText: "/a")) {
            try node(obj(("a", obj((".sv", .string("timestamp"))))))
        }
        #expect(throws: DataError(.duplicateKey, atText: "/")) { try node(obj(("a", .int(1)), ("a", .int(2)))) }
        #expect(throws: DataError(.invalidPriority, atText: "/.priority")) {
            try node(obj(("a", .int(1)), (".priority", .bool(true))))
        }
        #expect(throws: DataError(.invalidPriority, atText: "/a/.priority")) {
            try node(obj(("a", obj((".value", .int(1)), (".priority", obj())))))
        }
    }

    @Test func refusesBadLeaves() {
        #expect(throws: DataError(.invalidNumber, atText: "/n")) { try node(obj(("n", .double(.nan)))) }
        #expect(throws: DataError(.invalidNumber, atText: "/0")) { try node(arr(.double(.infinity))) }
        let big = String(repeating: "x", count: Node.maxStringBytes + 1)
        #expect(throws: DataError(.stringTooLarge, atText: "/s")) { try node(obj(("s", .string(big)))) }
        let limit = String(repeating: "x", count: Node.maxStringBytes)
        #expect((try? node(obj(("s", .string(limit))))) != nil)
    }

    /// Nests `levels` single-key objects around a leaf.
    private func nested(_ levels: Int) -> JSONValue {
        var json: JSONValue = .int(1)
        for _ in 0..<levels { json = obj(("k", json)) }
        return json
    }

    @Test func depthLimitCountsFromTheRoot() throws {
        #expect(try node(nested(32)).node(at: Path(segments: Array(repeating: "k", count: 32))).isLeaf)
        #expect(throws: DataError.self) { try node(nested(33)) }
        let at30 = Path(segments: Array(repeating: "p", count: 30))
        #expect((try? Node.from(json: nested(2), at: at30)) != nil)
        #expect(throws: DataError.self) { try Node.from(json: nested(3), at: at30) }
        do {
            _ = try Node.from(json: nested(3), at: at30)
        } catch {
            #expect(error.kind == .tooDeep)
            #expect(error.path == at30.description + "/k/k/k")
        }
        // Metadata keys count as segments, as the clients count them.
        let at31 = Path(segments: Array(repeating: "p", count: 31))
        #expect(throws: DataError.self) {
            try Node.from(json: obj(("k", obj((".value", .int(1)), (".priority", .int(1))))), at: at31)
        }
    }

    @Test func shallow() throws {
        let n = try node(obj(("a", obj(("x", .int(1)))), ("b", .int(2))))
        #expect(render(n.shallowJSON()) == "{\"a\":true,\"b\":true}")
        #expect(render(n.child("b").shallowJSON()) == "2")
        #expect(render(Node.empty.shallowJSON()) == "null")
    }

    @Test func integersStayIntegers() throws {
        let n = try node(obj(("i", .int(42)), ("d", .double(0.5))))
        #expect(render(n.json()) == "{\"d\":0.5d,\"i\":42}")
    }

    /// A random JSON value mixing valid and invalid keys, metadata members, arrays and odd numbers.
    static func randomJSON(_ rng: inout SeededGenerator, depth: Int) -> JSONValue {
        let keys = ["a", "b", "1", "10", "-1", "é", ".priority", ".value", ".sv", "x.y", "", "ok key"]
        switch Int.random(in: 0..<(depth > 5 ? 6 : 9), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int64.random(in: -5...5, using: &rng))
        case 3: return .double([0.5, -0.0, .nan, .infinity, 1e300][Int.random(in: 0..<5, using: &rng)])
        case 4: return .string(["", "s", "é"].randomElement(using: &rng)!)
        case 5: return .int(Int64.random(in: 0...100, using: &rng))
        case 6, 7:
            var members: [JSONMember] = []
            var used = Set<JSONKey>()
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                let key = keys.randomElement(using: &rng)!
                guard used.insert(JSONKey(key)).inserted else { continue }
                members.append(JSONMember(key, randomJSON(&rng, depth: depth + 1)))
            }
            return .object(members)
        default:
            return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in randomJSON(&rng, depth: depth + 1) })
        }
    }

    @Test func randomInputEitherFailsCleanlyOrRoundTrips() {
        var rng = SeededGenerator(seed: 31)
        var accepted = 0
        for _ in 0..<3000 {
            let json = Self.randomJSON(&rng, depth: 0)
            guard let node = try? Node.from(json: json) else { continue }
            accepted += 1
            // Export form keeps everything; plain form keeps everything but priorities.
            #expect((try? Node.from(json: node.json(export: true))) == node, "\(json)")
            #expect((try? Node.from(json: node.json())) == node.strippingPriorities(), "\(json)")
            #expect(node.etag == (node.isEmpty ? "null_etag" : node.hash))
        }
        #expect(accepted > 300)
    }

    @Test func writeJSONMatchesTheJSONValueSerialization() throws {
        // Random trees with arrays, priorities, escapes and numbers: the direct writer and json().write agree.
        var rng = SeededGenerator(seed: 77)
        func randomValue(_ depth: Int) -> JSONValue {
            switch rng.next(below: depth > 2 ? 4 : 8) {
            case 0: return .int(Int64(rng.next(below: 2000)) - 1000)
            case 1: return .double(Double(rng.next(below: 1000)) / 7)
            case 2: return .string(["", "a\"b", "line\nbreak", "é", "\u{1F600}", "\\"][rng.next(below: 6)])
            case 3: return .bool(rng.next(below: 2) == 0)
            case 4: return .array((0..<rng.next(below: 4)).map { _ in randomValue(depth + 1) })
            case 5:
                return .object([
                    JSONMember(".value", .int(Int64(rng.next(below: 9)))),
                    JSONMember(".priority", rng.next(below: 2) == 0 ? .string("p") : .int(3)),
                ])
            default:
                var members = (0..<rng.next(below: 5)).map { i in
                    JSONMember(["a", "1", "0", "2", "b c", "-1", "z"][(i + rng.next(below: 7)) % 7], randomValue(depth + 1))
                }
                var seen = Set<String>()
                members = members.filter { seen.insert($0.key).inserted }
                if rng.next(below: 3) == 0 { members.append(JSONMember(".priority", .double(1.5))) }
                return .object(members)
            }
        }
        for _ in 0..<500 {
            let tree = try Node.from(json: randomValue(0))
            for export in [false, true] {
                var direct: [UInt8] = []
                tree.writeJSON(export: export, into: &direct)
                var viaValue: [UInt8] = []
                tree.json(export: export).write(into: &viaValue)
                #expect(direct == viaValue, "\(String(decoding: viaValue, as: UTF8.self))")
            }
        }
    }
}

extension Node {
    /// The same tree without any priority (what plain JSON output can express).
    func strippingPriorities() -> Node {
        if isLeaf { return Node(leaf: value!) }
        return Node(children: children.map { (key: $0.key, node: $0.node.strippingPriorities()) })
    }
}
