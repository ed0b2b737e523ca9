// JSONWriterTests -- compact and pretty output, string escaping, JavaScript number text, round trips.

import Testing

@testable import CanopyCore

@Suite struct JSONWriterTests {
    static let numbers: [(Double, String)] = [
        (0, "0"), (-0.0, "0"), (5, "5"), (-5, "-5"), (1.5, "1.5"), (-1.5, "-1.5"), (0.1, "0.1"),
        (0.1 + 0.2, "0.30000000000000004"), (123.456, "123.456"), (100, "100"), (4.35, "4.35"),
        (1e15, "1000000000000000"), (9_007_199_254_740_992, "9007199254740992"), (1e16, "10000000000000000"),
        (1e20, "100000000000000000000"), (1.2345678901234568e20, "123456789012345680000"),
        (1e21, "1e+21"), (1.5e21, "1.5e+21"), (1e100, "1e+100"), (-1e21, "-1e+21"),
        (1e-6, "0.000001"), (2.5e-5, "0.000025"), (0.000123, "0.000123"), (1e-7, "1e-7"), (1.5e-7, "1.5e-7"),
        (-1e-7, "-1e-7"), (.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123456.789e3, "123456789"), (0.5, "0.5"), (.nan, "null"), (.infinity, "null"),
    ]

    /// A path written as a JSON string, as an admin action's answer lists them, is its description quoted.
    @Test(arguments: [
        Path.root, Path(segments: ["a"]), Path(segments: ["private", "adminable", "users", "u1", "content"]),
        Path(segments: ["q\"uote", "back\\slash", "tab\tnew\nline", "x\u{2028}y\u{2029}z", "\u{E9}t\u{E9}", "\u{1}\u{1F}"]),
    ])
    func aPathIsWrittenAsItsQuotedDescription(path: Path) {
        var out: [UInt8] = []
        JSONValue.writeQuoted(path, into: &out)
        #expect(String(decoding: out, as: UTF8.self) == JSONValue.quoted(path.description))
        #expect((try? JSONValue.parse(String(decoding: out, as: UTF8.self)))?.stringValue == path.description)
    }

    @Test(arguments: numbers)
    func formatsNumbersLikeJavaScript(value: Double, text: String) {
        #expect(JSONNumberFormat.text(value) == text)
        #expect(JSONValue.double(value).serialized() == text)
    }

    @Test func integersPrintInDecimal() {
        #expect(JSONValue.int(0).serialized() == "0")
        #expect(JSONValue.int(-42).serialized() == "-42")
        #expect(JSONValue.int(.max).serialized() == "9223372036854775807")
        #expect(JSONValue.int(.min).serialized() == "-9223372036854775808")
    }

    @Test func escapesStrings() {
        #expect(JSONValue.quoted("a\"b\\c") == "\"a\\\"b\\\\c\"")
        #expect(JSONValue.quoted("\n\t\r\u{8}\u{C}") == "\"\\n\\t\\r\\b\\f\"")
        #expect(JSONValue.quoted("\u{0}\u{1}\u{1F}") == "\"\\u0000\\u0001\\u001f\"")
        #expect(JSONValue.quoted("x\u{2028}y\u{2029}z") == "\"x\\u2028y\\u2029z\"")
        #expect(JSONValue.quoted("\u{E9}\u{2027}\u{202A}\u{1F600}/") == "\"\u{E9}\u{2027}\u{202A}\u{1F600}/\"")
        #expect(JSONValue.quoted("") == "\"\"")
    }

    @Test func compactOutput() {
        let v: JSONValue = ["a": [1, 2.5, nil, true], "b": [:], "c": [], "d": "e"]
        #expect(v.serialized() == "{\"a\":[1,2.5,null,true],\"b\":{},\"c\":[],\"d\":\"e\"}")
        #expect(v.description == v.serialized())
    }

    @Test func prettyOutputMatchesJSONStringify() {
        let v: JSONValue = ["a": [1, ["b": false]], "c": [:], "d": []]
        let expected = """
            {
              "a": [
                1,
                {
                  "b": false
                }
              ],
              "c": {},
              "d": []
            }
            """
        #expect(v.serialized(pretty: true) == expected)
        #expect(JSONValue.int(3).serialized(pretty: true) == "3")
    }

    @Test func writeAppends() {
        var out = Array("x=".utf8)
        JSONValue.array([1, "y"]).write(into: &out, pretty: false)
        #expect(String(decoding: out, as: UTF8.self) == "x=[1,\"y\"]")
    }

    static let roundTripDocuments = [
        "{\"a\":[1,-2.5,1e+21,1e-7,0.1],\"b\":{\"c\":null,\"d\":true},\"\u{E9}\":\"\\u2028\\n\\\"\"}",
        "[[],{},\"\",0,-1,9223372036854775807,-9223372036854775808,9223372036854775808]",
        "\"\\ud83d\\ude00 \u{4E2D}\"",
    ]

    @Test(arguments: roundTripDocuments)
    func roundTrips(text: String) throws {
        let value = try JSONValue.parse(text)
        for pretty in [false, true] {
            let again = try JSONValue.parse(value.serialized(pretty: pretty))
            #expect(again == value)
            #expect(again.serialized() == value.serialized())
        }
    }

    @Test func doublesRoundTripExactly() throws {
        var random = SplitMix64(seed: 42)
        for _ in 0..<2000 {
            let d = Double(bitPattern: random.next())
            guard d.isFinite else { continue }
            let text = JSONNumberFormat.text(d)
            let back = try #require(try JSONValue.parse(text).doubleValue)
            #expect(back == d || (d == 0 && back == 0), "\(text)")
        }
    }
}
