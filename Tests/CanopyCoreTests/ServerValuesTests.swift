// ServerValuesTests -- timestamp and increment placeholders resolved against the current tree.

import Testing

@testable import CanopyCore

@Suite struct ServerValuesTests {
    let now: Int64 = 1_700_000_000_123
    let timestamp: JSONValue = [".sv": "timestamp"]

    func increment(_ n: JSONValue) -> JSONValue { [".sv": ["increment": n]] }

    func tree() throws -> Node {
        try Node.from(json: [
            "i": 40, "d": 1.5, "s": "text", "big": .int(Int64.max), "b": true,
            "p": [".value": 1, ".priority": 10],
        ])
    }

    @Test func resolvesTimestamps() throws {
        let out = try ServerValues.resolve(["at": timestamp, "x": 1], at: .root, in: .empty, now: now)
        #expect(out == ["at": .int(now), "x": 1])
        #expect(try ServerValues.resolve(timestamp, at: Path(segments: ["a"]), in: .empty, now: now) == .int(now))
    }

    @Test(arguments: [
        ("i", JSONValue.int(2), JSONValue.int(42)),
        ("i", .double(0.5), .double(40.5)),
        ("d", .int(1), .double(2.5)),
        ("d", .double(-1.5), .double(0)),
        ("missing", .int(5), .int(5)),
        ("s", .int(5), .int(5)),
        ("b", .double(0.25), .double(0.25)),
        ("big", .int(1), .double(Double(Int64.max) + 1)),
    ])
    func incrementCases(_ key: String, _ delta: JSONValue, _ expected: JSONValue) throws {
        let out = try ServerValues.resolve(increment(delta), at: Path(segments: [key]), in: tree(), now: now)
        #expect(out == expected)
        if case .int = expected { #expect(out.int64Value != nil && !isDouble(out)) }
    }

    private func isDouble(_ v: JSONValue) -> Bool {
        if case .double = v { return true }
        return false
    }

    @Test func incrementReadsNestedLocations() throws {
        let root = try Node.from(json: ["a": ["b": ["c": 10]]])
        let out = try ServerValues.resolve(
            ["c": increment(1), "d": increment(1)], at: Path(segments: ["a", "b"]),
            in: root, now: now)
        #expect(out == ["c": 11, "d": 1])
        let arrays = try ServerValues.resolve([increment(1)], at: .root, in: try Node.from(json: ["0": 4]), now: now)
        #expect(arrays == [5])
    }

    @Test func placeholdersWithPriority() throws {
        let out = try ServerValues.resolve([".sv": "timestamp", ".priority": 3], at: .root, in: .empty, now: now)
        #expect(out == [".value": .int(now), ".priority": 3])
        #expect(try Node.from(json: out).priority == 3)
        let priority = try ServerValues.resolve(
            ["a": [".value": 1, ".priority": increment(1)]], at: .root,
            in: Node.from(json: ["a": [".value": 0, ".priority": 10]]), now: now)
        #expect(priority == ["a": [".value": 1, ".priority": 11]])
        let priorityPath = try Path(parsing: "/p/.priority", allowPriorityLeaf: true)
        #expect(try ServerValues.resolve(increment(5), at: priorityPath, in: tree(), now: now) == 15)
    }

    @Test func valueWrapperResolvesAtTheNodeItself() throws {
        let out = try ServerValues.resolve(
            ["i": [".value": increment(1), ".priority": 1]], at: .root,
            in: tree(), now: now)
        #expect(out == ["i": [".value": 41, ".priority": 1]])
    }

    @Test func refusesUnknownAndMalformedPlaceholders() {
        let bad: [JSONValue] = [
            [".sv": "now"], [".sv": ["increment": "1"]], [".sv": ["increment": 1, "x": 2]], [".sv": ["decrement": 1]],
            [".sv": 5], [".sv": "timestamp", "other": 1], [".sv": .null],
        ]
        for json in bad {
            #expect(throws: DataError(.invalidServerValue, atText: "/a/x")) {
                try ServerValues.resolve(["x": json], at: Path(segments: ["a"]), in: .empty, now: now)
            }
        }
    }

    @Test func unchangedWithoutPlaceholders() throws {
        let json: JSONValue = ["a": [1, 2, ["b": "c"]]]
        #expect(try ServerValues.resolve(json, at: .root, in: .empty, now: now) == json)
        #expect(!ServerValues.containsPlaceholder(json))
        #expect(ServerValues.containsPlaceholder(["a": [1, timestamp]]))
    }

    @Test func unresolvedPlaceholderIsRefusedByNode() {
        #expect(throws: DataError(.unresolvedServerValue, atText: "/t")) { try Node.from(json: ["t": timestamp]) }
    }
}
