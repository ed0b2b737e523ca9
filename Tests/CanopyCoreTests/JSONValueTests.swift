// JSONValueTests -- equality, hashing, literals and accessors of JSONValue.

import Testing

@testable import CanopyCore

@Suite struct JSONValueTests {
    @Test func numbersCompareNumerically() {
        #expect(JSONValue.int(1) == .double(1.0))
        #expect(JSONValue.double(1.0) == .int(1))
        #expect(JSONValue.int(0) == .double(-0.0))
        #expect(JSONValue.int(1) != .double(1.5))
        #expect(JSONValue.int(Int64.max) != .double(9_223_372_036_854_775_808.0))
        #expect(JSONValue.int(1) != .string("1"))
        #expect(JSONValue.bool(true) != .int(1))
    }

    @Test func equalNumbersHashAlike() {
        #expect(JSONValue.int(7).hashValue == JSONValue.double(7).hashValue)
        #expect(JSONValue.int(0).hashValue == JSONValue.double(-0.0).hashValue)
        let set: Set<JSONValue> = [.int(1), .double(1), .double(2.5)]
        #expect(set.count == 2)
    }

    @Test func objectsCompareAsUnorderedSets() {
        let a: JSONValue = ["x": 1, "y": [true, nil]]
        let b: JSONValue = ["y": [true, nil], "x": 1.0]
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != ["x": 1])
        #expect(a != ["x": 1, "z": [true, nil]])
        #expect(a != ["x": 2, "y": [true, nil]])
    }

    @Test func bigObjectsCompareAsUnorderedSets() {
        let members = (0..<40).map { JSONMember("k\($0)", .int(Int64($0))) }
        let a = JSONValue.object(members)
        let b = JSONValue.object(members.reversed())
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        var changed = members
        changed[17].value = .int(-1)
        #expect(a != .object(changed))
        changed[17] = JSONMember("other", .int(17))
        #expect(a != .object(changed))
    }

    @Test func keysCompareByExactBytes() {
        let composed = "\u{E9}"  // é
        let decomposed = "e\u{301}"  // e + combining acute
        #expect(composed == decomposed)  // Swift: canonically equivalent
        #expect(JSONValue.object([JSONMember(composed, 1)]) != .object([JSONMember(decomposed, 1)]))
        #expect(JSONValue.string(composed) != .string(decomposed))
        #expect(JSONKey(composed) != JSONKey(decomposed))
        let value = JSONValue.object([JSONMember(decomposed, 2)])
        #expect(value[composed] == nil)
        #expect(value[decomposed] == 2)
    }

    @Test func arraysCompareInOrder() {
        #expect(JSONValue.array([1, 2]) != [2, 1])
        #expect(JSONValue.array([1, 2]) == [1.0, 2])
        #expect(JSONValue.array([]) != .object([]))
    }

    @Test func literalsBuildTheExpectedCases() {
        let v: JSONValue = ["n": nil, "b": false, "i": 3, "d": 2.5, "s": "x", "a": [1]]
        guard case .object(let members) = v else {
            Issue.record("not an object")
            return
        }
        #expect(members.map(\.key) == ["n", "b", "i", "d", "s", "a"])
        if case .int(3) = members[2].value {} else { Issue.record("3 is not .int") }
        if case .double(2.5) = members[3].value {} else { Issue.record("2.5 is not .double") }
    }

    @Test func accessors() {
        let v: JSONValue = ["s": "x", "b": true, "i": 4, "d": 4.0, "f": 4.5, "big": 1e300, "a": [1, 2], "o": [:]]
        #expect(v["s"]?.stringValue == "x")
        #expect(v["s"]?.boolValue == nil)
        #expect(v["b"]?.boolValue == true)
        #expect(v["i"]?.int64Value == 4)
        #expect(v["d"]?.int64Value == 4)
        #expect(v["f"]?.int64Value == nil)
        #expect(v["big"]?.int64Value == nil)
        #expect(v["f"]?.doubleValue == 4.5)
        #expect(v["i"]?.doubleValue == 4)
        #expect(v["i"]?.isNumber == true)
        #expect(v["s"]?.isNumber == false)
        #expect(v["a"]?.arrayValue?.count == 2)
        #expect(v["a"]?[1] == 2)
        #expect(v["a"]?[2] == nil)
        #expect(v["o"]?.members?.isEmpty == true)
        #expect(v["missing"] == nil)
        #expect(JSONValue.null.isNull)
        #expect(!JSONValue.int(0).isNull)
        #expect(JSONValue.int(1)["k"] == nil)
    }
}
