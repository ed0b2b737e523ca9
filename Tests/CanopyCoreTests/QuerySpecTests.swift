// QuerySpecTests -- query evaluation (the dinosaur heights example), REST and wire parsing, round trips.

import Testing

@testable import CanopyCore

@Suite struct QuerySpecTests {
    /// The documentation's dinosaurs, heights [25, 2.1, 0.6, 0.6, 4, 3].
    static let dinosaurs: Node = try! Node.from(json: [
        "bruhathkayosaurus": ["height": 25, "order": "saurischia"],
        "lambeosaurus": ["height": 2.1, "order": "ornithischia"],
        "linhenykus": ["height": 0.6, "order": "theropoda"],
        "pterodactyl": ["height": 0.6, "order": "pterosauria"],
        "stegosaurus": ["height": 4, "order": "ornithischia"],
        "triceratops": ["height": 3, "order": "ornithischia"],
        ".priority": "top",
    ])
    static let byHeight = [
        "linhenykus", "pterodactyl", "lambeosaurus", "triceratops", "stegosaurus", "bruhathkayosaurus",
    ]
    let height = QueryIndex.child(Path(segments: ["height"]))

    func rest(_ params: [String: String]) throws -> QuerySpec {
        try #require(try QuerySpec.fromREST(params))
    }

    /// The keys a query keeps, in index order.
    func result(_ q: QuerySpec, _ node: Node = dinosaurs) -> [String] {
        let window = q.window(of: node)
        return q.orderedChildren(of: window).map(\.key)
    }

    @Test func ordersByChild() {
        let q = QuerySpec(index: height)
        #expect(q.orderedChildren(of: Self.dinosaurs).map(\.key) == Self.byHeight)
        #expect(q.loadsAllData)
        #expect(q.window(of: Self.dinosaurs) === Self.dinosaurs)
    }

    @Test(arguments: [
        (["startAt": "3"], ["triceratops", "stegosaurus", "bruhathkayosaurus"]),
        (["endAt": "3"], ["linhenykus", "pterodactyl", "lambeosaurus", "triceratops"]),
        (["equalTo": "0.6"], ["linhenykus", "pterodactyl"]),
        (["equalTo": "0.6,\"pterodactyl\""], ["pterodactyl"]),
        (["startAt": "0.6,\"m\""], ["pterodactyl", "lambeosaurus", "triceratops", "stegosaurus", "bruhathkayosaurus"]),
        (["endAt": "0.6,\"m\""], ["linhenykus"]),
        (["limitToFirst": "2"], ["linhenykus", "pterodactyl"]),
        (["limitToLast": "2"], ["stegosaurus", "bruhathkayosaurus"]),
        (["startAt": "3", "limitToFirst": "2"], ["triceratops", "stegosaurus"]),
        (["endAt": "3", "limitToLast": "2"], ["lambeosaurus", "triceratops"]),
        (["startAt": "1", "endAt": "4"], ["lambeosaurus", "triceratops", "stegosaurus"]),
        (["startAfter": "0.6"], ["lambeosaurus", "triceratops", "stegosaurus", "bruhathkayosaurus"]),
        (
            ["startAfter": "0.6,\"linhenykus\""],
            ["pterodactyl", "lambeosaurus", "triceratops", "stegosaurus", "bruhathkayosaurus"]
        ),
        (["endBefore": "3"], ["linhenykus", "pterodactyl", "lambeosaurus"]),
        (["endBefore": "0.6,\"pterodactyl\""], ["linhenykus"]),
        (["limitToFirst": "0"], []),
        (["limitToLast": "100"], byHeight),
        (["startAt": "\"a\""], []),
        (["endAt": "true"], []),
        (["startAt": "null", "limitToFirst": "1"], ["linhenykus"]),
    ])
    func dinosaurHeights(_ params: [String: String], _ expected: [String]) throws {
        var all = params
        all["orderBy"] = "\"height\""
        #expect(result(try rest(all)) == expected)
    }

    @Test(arguments: [
        (["startAt": "\"p\""], ["pterodactyl", "stegosaurus", "triceratops"]),
        (["endAt": "\"linhenykus\""], ["bruhathkayosaurus", "lambeosaurus", "linhenykus"]),
        (["endBefore": "\"linhenykus\""], ["bruhathkayosaurus", "lambeosaurus"]),
        (["startAfter": "\"pterodactyl\""], ["stegosaurus", "triceratops"]),
        (["equalTo": "\"stegosaurus\""], ["stegosaurus"]),
        (["limitToLast": "1"], ["triceratops"]),
        (["startAt": "\"l\"", "limitToFirst": "2"], ["lambeosaurus", "linhenykus"]),
    ])
    func dinosaurKeys(_ params: [String: String], _ expected: [String]) throws {
        var all = params
        all["orderBy"] = "\"$key\""
        #expect(result(try rest(all)) == expected)
    }

    @Test func windowKeepsSubtreesAndDropsTopPriority() throws {
        let window = try rest(["orderBy": "\"height\"", "limitToFirst": "2"]).window(of: Self.dinosaurs)
        #expect(window.priority == nil)
        #expect(window.childKeys == ["linhenykus", "pterodactyl"])  // key order inside the node
        #expect(window.child("pterodactyl") === Self.dinosaurs.child("pterodactyl"))
        #expect(QuerySpec(limit: .first(1)).window(of: Node(leaf: 5)).isEmpty)
    }

    @Test func valueOrdering() throws {
        let scores = try Node.from(json: [
            "s": "b", "t": "a", "n2": 10, "n1": 2, "f": false, "tr": true, "o": ["x": 1], "d": 2.5,
        ])
        let q = QuerySpec(index: .value)
        #expect(q.orderedChildren(of: scores).map(\.key) == ["f", "tr", "n1", "d", "n2", "t", "s", "o"])
        #expect(
            result(try rest(["orderBy": "\"$value\"", "startAt": "2", "endAt": "\"a\""]), scores)
                == ["n1", "d", "n2", "t"])
        #expect(result(try rest(["orderBy": "\"$value\"", "startAfter": "\"b\""]), scores) == ["o"])
    }

    @Test func priorityOrdering() throws {
        let tree = try Node.from(json: [
            "a": [".value": 1, ".priority": "z"], "b": [".value": 1, ".priority": 5], "c": 1,
            "d": [".value": 1, ".priority": 1], "e": ["x": 1, ".priority": 5],
        ])
        let q = QuerySpec.default
        #expect(q.orderedChildren(of: tree).map(\.key) == ["c", "d", "b", "e", "a"])
        #expect(result(try rest(["orderBy": "\"$priority\"", "startAt": "2", "endAt": "5"]), tree) == ["b", "e"])
        #expect(result(try rest(["orderBy": "\"$priority\"", "startAt": "\"a\""]), tree) == ["a"])
        #expect(result(try rest(["orderBy": "\"$priority\"", "endAt": "null"]), tree) == ["c"])
    }

    @Test func nestedChildPath() throws {
        let tree = try Node.from(json: ["a": ["r": ["p": 3]], "b": ["r": ["p": 1]], "c": ["r": 7], "d": 4])
        let q = try rest(["orderBy": "\"r/p\""])
        #expect(q.index == .child(Path(segments: ["r", "p"])))
        #expect(q.orderedChildren(of: tree).map(\.key) == ["c", "d", "b", "a"])
    }

    @Test func noQueryParameters() throws {
        #expect(try QuerySpec.fromREST([:]) == nil)
        #expect(try QuerySpec.fromREST(["print": "pretty", "auth": "x"]) == nil)
        #expect(try QuerySpec.fromREST(["orderBy": "\"$key\""]) == QuerySpec(index: .key))
    }

    @Test(arguments: [
        (["limitToFirst": "1"], QueryError.Kind.orderByRequired),
        (["startAt": "1"], .orderByRequired),
        (["orderBy": "height"], .orderByInvalid),
        (["orderBy": "\"a$b\""], .orderByInvalid),
        (["orderBy": "\"/\""], .orderByInvalid),
        (["orderBy": "3"], .orderByInvalid),
        (["orderBy": "\"$key\"", "startAt": "1"], .invalidKeyBound),
        (["orderBy": "\"$key\"", "startAt": "\"a.b\""], .invalidKeyBound),
        (["orderBy": "\"$key\"", "startAt": "\"a\",\"b\""], .invalidKeyBound),
        (["orderBy": "\"$priority\"", "startAt": "true"], .invalidPriorityBound),
        (["orderBy": "\"h\"", "startAt": "[1]"], .invalidBound(parameter: "startAt")),
        (["orderBy": "\"h\"", "startAt": "abc"], .invalidBound(parameter: "startAt")),
        (["orderBy": "\"h\"", "endAt": "1,b"], .invalidBound(parameter: "endAt")),
        (["orderBy": "\"h\"", "endAt": "1,\"a$\""], .invalidKeyBound),
        (["orderBy": "\"h\"", "limitToFirst": "-1"], .invalidLimit(parameter: "limitToFirst")),
        (["orderBy": "\"h\"", "limitToLast": "1.5"], .invalidLimit(parameter: "limitToLast")),
        (["orderBy": "\"h\"", "limitToFirst": "1", "limitToLast": "1"], .conflicting("limitToFirst", "limitToLast")),
        (["orderBy": "\"h\"", "equalTo": "1", "startAt": "1"], .conflicting("equalTo", "startAt")),
        (["orderBy": "\"h\"", "startAt": "1", "startAfter": "1"], .conflicting("startAt", "startAfter")),
        (["orderBy": "\"h\"", "endAt": "1", "endBefore": "1"], .conflicting("endAt", "endBefore")),
    ])
    func restErrors(_ params: [String: String], _ kind: QueryError.Kind) {
        #expect(throws: QueryError(kind)) { try QuerySpec.fromREST(params) }
    }

    @Test func restErrorTexts() {
        #expect(
            QueryError(.orderByRequired).userMessage
                == "orderBy must be defined when other query parameters are defined")
        #expect(QueryError(.orderByInvalid).userMessage == "orderBy must be a valid JSON encoded path")
        #expect(QueryError(.invalidKeyBound).userMessage == "Constraint key field must be a valid key name")
        #expect(QueryError(.orderByInvalid).code == "invalid_query")
    }

    @Test func restBoundsWithCommasInStrings() throws {
        let q = try rest(["orderBy": "\"name\"", "startAt": "\"a,b\\\"c\",\"k\""])
        #expect(q.start == QueryBound(value: "a,b\"c", name: .name("k")))
        let plain = try rest(["orderBy": "\"name\"", "equalTo": "\"x,y\""])
        #expect(plain.start == QueryBound(value: "x,y", name: .min))
        #expect(plain.end == QueryBound(value: "x,y", name: .max))
    }

    @Test(arguments: [
        ("{\"i\":\"height\",\"sp\":3,\"sin\":true,\"l\":2,\"vf\":\"l\"}", ["triceratops", "stegosaurus"]),
        ("{\"i\":\"height\",\"sp\":0.6,\"sin\":true,\"ep\":0.6,\"ein\":true}", ["linhenykus", "pterodactyl"]),
        ("{\"sp\":0.6,\"sn\":\"[MAX_NAME]\",\"sin\":false,\"i\":\"height\",\"l\":1,\"vf\":\"l\"}", ["lambeosaurus"]),
        (
            "{\"ep\":3,\"en\":\"[MIN_NAME]\",\"ein\":false,\"i\":\"height\"}",
            ["linhenykus", "pterodactyl", "lambeosaurus"]
        ),
        (
            "{\"sp\":0.6,\"sn\":\"[MAX_NAME]\",\"i\":\"height\"}",
            ["lambeosaurus", "triceratops", "stegosaurus", "bruhathkayosaurus"]
        ),
        ("{\"sp\":\"linhenykus-\",\"l\":2,\"vf\":\"l\",\"i\":\".key\"}", ["pterodactyl", "stegosaurus"]),
        ("{\"i\":\".key\",\"sp\":\"p\",\"sin\":true}", ["pterodactyl", "stegosaurus", "triceratops"]),
        ("{\"i\":\".key\",\"sp\":\"pterodactyl\",\"sin\":false}", ["stegosaurus", "triceratops"]),
        ("{\"l\":3,\"vf\":\"r\",\"i\":\"/height\"}", ["triceratops", "stegosaurus", "bruhathkayosaurus"]),
        ("{\"l\":1,\"i\":\"height\"}", ["bruhathkayosaurus"]),
        ("{\"sp\":2,\"l\":1,\"i\":\"height\"}", ["lambeosaurus"]),
    ])
    func wireQueries(_ text: String, _ expected: [String]) throws {
        let q = try QuerySpec.fromWire(JSONValue.parse(text))
        #expect(result(q) == expected)
        #expect(try QuerySpec.fromWire(q.wireObject()) == q)
    }

    @Test func syntheticPredecessorNames() throws {
        // endBefore("stegosaurus") on the key index, old style: predecessor padded with 'z' to 786 characters.
        let predecessor = "stegosaurur" + String(repeating: "z", count: 775)
        let q = try QuerySpec.fromWire(["ep": .string(predecessor), "i": ".key"])
        #expect(result(q) == ["bruhathkayosaurus", "lambeosaurus", "linhenykus", "pterodactyl"])
        let byValue = try QuerySpec.fromWire([
            "ep": 0.6, "en": .string("pterodactyk" + String(repeating: "z", count: 775)),
            "i": "height",
        ])
        #expect(result(byValue) == ["linhenykus"])
    }

    @Test func wireObjectShape() throws {
        let q = QuerySpec(index: height, start: QueryBound(value: 3, name: .min), limit: .first(2))
        #expect(q.wireObject() == ["sp": 3, "sin": true, "l": 2, "vf": "l", "i": "height"])
        #expect(QuerySpec.default.wireObject() == [:])
        let equal = try rest(["orderBy": "\"height\"", "equalTo": "0.6"])
        #expect(equal.wireObject() == ["sp": 0.6, "sin": true, "ep": 0.6, "ein": true, "i": "height"])
        #expect(
            try rest(["orderBy": "\"$key\"", "startAt": "\"b\""]).wireObject() == ["sp": "b", "sin": true, "i": ".key"])
    }

    @Test(arguments: [
        "[]", "{\"i\":3}", "{\"i\":\"a$\"}", "{\"l\":-1}", "{\"l\":\"2\"}", "{\"l\":2,\"vf\":\"x\"}",
        "{\"sp\":[1]}", "{\"sp\":1,\"sin\":\"yes\"}", "{\"sp\":1,\"sn\":2}", "{\"i\":\".key\",\"sp\":1}",
    ])
    func wireErrors(_ text: String) throws {
        let json = try JSONValue.parse(text)
        #expect(throws: QueryError.self) { try QuerySpec.fromWire(json) }
    }

    @Test func boundsComparedByIndexThenName() {
        let q = QuerySpec(index: .value, start: QueryBound(value: 5, name: .name("b")))
        #expect(!q.isInRange((key: "a", node: Node(leaf: 5))))
        #expect(q.isInRange((key: "b", node: Node(leaf: 5))))
        #expect(q.isInRange((key: "a", node: Node(leaf: 5.5))))
        #expect(!q.isInRange((key: "z", node: Node(leaf: 4))))
        var exclusive = q
        exclusive.start?.isInclusive = false
        #expect(!exclusive.isInRange((key: "b", node: Node(leaf: 5))))
        #expect(exclusive.isInRange((key: "c", node: Node(leaf: 5))))
    }

    @Test(arguments: [QueryLimit.first(5), .last(5), .first(300), .last(300), .first(600), .last(0)])
    func largeLimitsMatchAFullSort(_ limit: QueryLimit) {
        var rng = SeededGenerator(seed: 77)
        let children = (0..<500).map { i in
            (key: "k\(i)", node: Node(children: [(key: "score", node: Node(leaf: .int(Int64(rng.next() % 50))))]))
        }
        let node = Node(children: children)
        let q = QuerySpec(
            index: .child(Path(segments: ["score"])), start: QueryBound(value: 3, name: .min), limit: limit)
        let inRange = q.orderedChildren(of: node).filter { q.isInRange($0) }.map(\.key)
        let expected: [String]
        switch limit {
        case .first(let n): expected = Array(inRange.prefix(n))
        case .last(let n): expected = Array(inRange.suffix(n))
        }
        let window = q.window(of: node)
        #expect(q.orderedChildren(of: window).map(\.key) == expected)
        #expect(window.childKeys == expected.sorted { compareKeys($0, $1) < 0 })
    }

    @Test func windowMatchesReferenceOnRandomData() {
        var rng = SeededGenerator(seed: 2024)
        let keys = ["a", "b", "c", "1", "2", "10", "-3", "aa", "z"]
        let values: [JSONValue] = [1, 2, 2.5, "a", "b", true, false, ["h": 1], ["h": "x"], ["h": 2]]
        let bounds: [JSONValue] = [.null, 1, 2, "a", "b", true, false, 2.5]
        let indexes: [QueryIndex] = [.priority, .key, .value, .child(Path(segments: ["h"]))]
        for _ in 0..<500 {
            var children: [(key: String, node: Node)] = []
            for key in keys where Bool.random(using: &rng) {
                var child = try! Node.from(json: values.randomElement(using: &rng)!)
                if Bool.random(using: &rng) {
                    child = child.withPriority(bounds.filter(\.isNumberOrString).randomElement(using: &rng))
                }
                children.append((key, child))
            }
            let node = Node(children: children)
            let index = indexes.randomElement(using: &rng)!
            func bound(_ defaultName: QueryName) -> QueryBound? {
                guard Bool.random(using: &rng) else { return nil }
                let value: JSONValue =
                    index == .key ? .string(keys.randomElement(using: &rng)!) : bounds.randomElement(using: &rng)!
                let name: QueryName = Bool.random(using: &rng) ? defaultName : .name(keys.randomElement(using: &rng)!)
                return QueryBound(value: value, name: name, isInclusive: Bool.random(using: &rng))
            }
            let limit: QueryLimit? = [nil, .first(Int(rng.next() % 4)), .last(Int(rng.next() % 4))].randomElement(
                using: &rng)!
            let q = QuerySpec(index: index, start: bound(.min), end: bound(.max), limit: limit)
            var expected = q.orderedChildren(of: node).filter { q.isInRange($0) }.map(\.key)
            switch limit {
            case .first(let n)?: expected = Array(expected.prefix(n))
            case .last(let n)?: expected = Array(expected.suffix(n))
            case nil: break
            }
            let window = q.window(of: node)
            if q.loadsAllData {
                #expect(window === node)
            } else {
                #expect(q.orderedChildren(of: window).map(\.key) == expected, "\(q.wireObject())")
            }
        }
    }

    @Test func randomRESTParametersParseOrFailCleanly() throws {
        var rng = SeededGenerator(seed: 8)
        let names = [
            "orderBy", "startAt", "endAt", "equalTo", "startAfter", "endBefore", "limitToFirst", "limitToLast",
        ]
        let values = [
            "\"$key\"", "\"$value\"", "\"h\"", "1", "-1", "\"a\"", "\"a\",\"b\"", "1,\"k\"", "null", "true", "[",
            "\"", ",", "1,", "\"a,", "2.5", "{}", "\"\\\"\",\"k\"",
        ]
        for _ in 0..<3000 {
            var params: [String: String] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                params[names.randomElement(using: &rng)!] = values.randomElement(using: &rng)!
            }
            guard let spec = try? QuerySpec.fromREST(params) else { continue }
            // Whatever parses must survive the wire encoding and evaluate without trapping.
            #expect(try QuerySpec.fromWire(spec.wireObject()) == spec, "\(params) -> \(spec.wireObject())")
            _ = spec.window(of: Self.dinosaurs)
        }
    }
}

extension JSONValue {
    fileprivate var isNumberOrString: Bool {
        switch self {
        case .int, .double, .string: true
        default: false
        }
    }
}
