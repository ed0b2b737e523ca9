// LeafCodecTests -- JSON text of stored primitives round-trips exactly; malformed text is refused.
import CanopyCore
import Testing

@testable import CanopyStore

@Suite struct LeafCodecTests {
    @Test(arguments: [
        (JSONValue.bool(true), "true"),
        (.bool(false), "false"),
        (.int(0), "0"),
        (.int(-42), "-42"),
        (.int(Int64.max), "9223372036854775807"),
        (.int(Int64.min), "-9223372036854775808"),
        (.double(1.5), "1.5"),
        (.double(1e21), "1e+21"),
        (.double(2.5e-7), "2.5e-7"),
        (.double(-0.25), "-0.25"),
        (.string(""), "\"\""),
        (.string("hi \"there\""), "\"hi \\\"there\\\"\""),
        (.string("back\\slash"), "\"back\\\\slash\""),
        (.string("line\nbreak\u{1}"), "\"line\\nbreak\\u0001\""),
        (.string("é 🌲"), "\"é 🌲\""),
    ])
    func encodesAndDecodes(value: JSONValue, json: String) throws {
        #expect(try LeafCodec.encode(value, path: ["k"]) == json)
        let decoded = try LeafCodec.decode(json, key: "k")
        #expect(text(decoded) == json)
        #expect(kind(decoded) == kind(value))
    }

    @Test func integralDoublesReadBackAsEqualIntegers() throws {
        // JavaScript number text: 3.0 prints as "3"; CanopyCore treats .int(3) and .double(3) as equal.
        #expect(try LeafCodec.encode(.double(3.0), path: []) == "3")
        #expect(try LeafCodec.decode("3", key: "k") == .double(3.0))
        #expect(try LeafCodec.encode(.double(1e20), path: []) == "100000000000000000000")
        #expect(try LeafCodec.decode("100000000000000000000", key: "k") == .double(1e20))
    }

    @Test func decodesEscapesItDoesNotWrite() throws {
        #expect(text(try LeafCodec.decode("\"\\ud83c\\udf32\\/\\t\"", key: "k")) == text(.string("🌲/\t")))
    }

    @Test(arguments: [
        "", "nul", "tru", "\"open", "\"a\"b", "\"\\x\"", "\"\\ud83c\"", "1e999", "--1", "{}", "[1]", "null", "1 2",
        "01",
    ])
    func refusesMalformedText(_ json: String) {
        #expect(throws: StoreError.self) { try LeafCodec.decode(json, key: "k") }
    }

    @Test(arguments: [JSONValue.null, .array([]), .object([]), .double(.nan), .double(.infinity)])
    func refusesNonPrimitives(_ value: JSONValue) {
        #expect { try LeafCodec.encode(value, path: ["a", "b"]) } throws: { error in
            (error as? StoreError)?.kind == .invalidMutation && (error as? StoreError)?.location == "/a/b"
        }
    }

    private func kind(_ value: JSONValue) -> String {
        switch value {
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .null, .array, .object: "other"
        }
    }
}
