// JSONParserTests -- valid and invalid documents, error positions, limits, splits and fuzzing.

import Testing

@testable import CanopyCore

@Suite struct JSONParserTests {
    static let valid: [(String, JSONValue)] = [
        ("null", nil), ("true", true), ("false", false), ("0", 0), ("-0", 0), ("42", 42), ("-17", -17),
        ("9223372036854775807", .int(.max)), ("-9223372036854775808", .int(.min)),
        ("9223372036854775808", .double(9_223_372_036_854_775_808)),
        ("1.5", 1.5), ("-0.25", -0.25), ("1e3", .double(1000)), ("1E+3", .double(1000)), ("2.5e-3", 0.0025),
        ("1e-400", .double(0)), ("0.1", 0.1), ("1.7976931348623157e308", .double(.greatestFiniteMagnitude)),
        ("5e-324", .double(.leastNonzeroMagnitude)), ("123456789012345678901234567890", .double(1.2345678901234568e29)),
        ("\"\"", ""), ("\"abc\"", "abc"), ("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\u{8}\u{C}\n\r\t"),
        ("\"\\u0041\\u00e9\\u4E2D\"", "A\u{E9}\u{4E2D}"), ("\"\\ud83d\\ude00\"", "\u{1F600}"), ("\"\\u0000\"", "\u{0}"),
        ("\"h\u{E9}llo \u{1F600}\"", "h\u{E9}llo \u{1F600}"), ("\"a\\nb\u{E9}\"", "a\nb\u{E9}"),
        ("[]", []), ("{}", [:]), (" [ 1 , [ ] , { } ] ", [1, [], [:]]),
        ("{\"a\":{\"b\":[null,true]},\"c\":\"d\"}", ["a": ["b": [nil, true]], "c": "d"]),
        ("\t\r\n 7 \n", 7),
    ]

    @Test(arguments: valid)
    func parsesValidDocuments(text: String, expected: JSONValue) throws {
        let value = try JSONValue.parse(text)
        #expect(value == expected)
        #expect(try JSONValue.parse(Array(text.utf8)) == expected)
    }

    @Test func integerLiteralsStayIntegers() throws {
        if case .int(43) = try JSONValue.parse("43") {} else { Issue.record("43 is not .int") }
        if case .double = try JSONValue.parse("43.0") {} else { Issue.record("43.0 is not .double") }
        if case .double = try JSONValue.parse("4e1") {} else { Issue.record("4e1 is not .double") }
    }

    @Test func doublesAreCorrectlyRounded() throws {
        // Each needs the slow path (too many digits or too large an exponent) and must match Swift's parser.
        for text in [
            "0.30000000000000004", "2.2250738585072011e-308", "9007199254740993.0",
            "1.00000000000000011102230246251565404236316680908203125",
            "7.038531e-26", "123456789012345678e-30", "8.5e200",
        ] {
            let expected = try #require(Double(text))
            #expect(try JSONValue.parse(text) == .double(expected), "\(text)")
        }
    }

    static let invalid: [(String, JSONParseError.Reason)] = [
        ("", .emptyInput), ("   ", .emptyInput), ("[1,]", .trailingComma), ("{\"a\":1,}", .trailingComma),
        ("01", .leadingZero), ("-01", .leadingZero), ("1.", .invalidNumber), ("-", .invalidNumber),
        (".5", .unexpected(expected: "a value")),
        ("1e", .invalidNumber), ("1e+", .invalidNumber), ("+1", .unexpected(expected: "a value")),
        ("NaN", .unexpected(expected: "a value")), ("Infinity", .unexpected(expected: "a value")),
        ("-Infinity", .invalidNumber), ("1e309", .numberOutOfRange), ("-1e400", .numberOutOfRange),
        ("\"a\u{1}\"", .controlCharacterInString), ("\"a\nb\"", .controlCharacterInString),
        ("\"\\x\"", .invalidEscape), ("\"\\u12G4\"", .invalidEscape), ("\"\\ud800\"", .loneSurrogate),
        ("\"\\udc00\"", .loneSurrogate), ("\"\\ud800\\u0041\"", .loneSurrogate), ("\"\\ud800x\"", .loneSurrogate),
        ("{\"a\":1,\"a\":2}", .duplicateKey), ("1 2", .trailingGarbage), ("{} x", .trailingGarbage),
        ("[1", .unexpectedEnd), ("{\"a\"", .unexpectedEnd), ("\"abc", .unexpectedEnd),
        ("[1 2]", .unexpected(expected: "',' or ']'")),
        ("{\"a\" 1}", .unexpected(expected: "':'")), ("{\"a\":1 \"b\":2}", .unexpected(expected: "',' or '}'")),
        ("{1:2}", .unexpected(expected: "a string key or '}'")), ("{\"a\":1,2}", .unexpected(expected: "a string key")),
        ("tru", .unexpectedEnd), ("trUe", .unexpected(expected: "a value")), ("nul", .unexpectedEnd),
        ("// c\n1", .unexpected(expected: "a value")), ("[1,,2]", .unexpected(expected: "a value")),
        ("\u{FEFF}1", .unexpected(expected: "a value")), ("'a'", .unexpected(expected: "a value")),
    ]

    @Test(arguments: invalid)
    func refusesInvalidDocuments(text: String, reason: JSONParseError.Reason) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
        do {
            _ = try JSONValue.parse(text)
        } catch {
            #expect(error.reason == reason, "\(text)")
            #expect(error.code == "invalid_json")
        }
    }

    static let invalidUTF8: [[UInt8]] = [
        [0x22, 0xC3, 0x22],  // truncated 2-byte sequence
        [0x22, 0xC0, 0x80, 0x22],  // overlong NUL
        [0x22, 0xE0, 0x80, 0x80, 0x22],  // overlong 3-byte
        [0x22, 0xED, 0xA0, 0x80, 0x22],  // encoded surrogate
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
        [0x22, 0xFF, 0x22], [0x22, 0x80, 0x22],  // invalid lead, lone continuation
        [0x22, 0x5C, 0x6E, 0xE2, 0x82, 0x22],  // truncated after an escape (slow path)
        [0xC3, 0xA9],  // non-ASCII outside a string
    ]

    @Test(arguments: invalidUTF8)
    func refusesInvalidUTF8(_ bytes: [UInt8]) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(bytes) }
    }

    @Test func invalidUTF8InCommentsIsRefused() {
        let bytes: [UInt8] = Array("1 // ".utf8) + [0xFF] + Array("\n".utf8)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(bytes, options: .init(allowComments: true)) }
    }

    @Test func errorCarriesLineAndColumn() {
        do {
            _ = try JSONValue.parse("{\n  \"a\": 1\n  \"\u{E9}\u{E9}\": x\n}")
            Issue.record("parsed")
        } catch {
            #expect(error.line == 3)
            #expect(error.column == 3)
            #expect(error.offset == 13)
            #expect(error.reason == .unexpected(expected: "',' or '}'"))
            #expect(
                error.userMessage
                    == "Invalid data; couldn't parse JSON object, array, or value (line 3, column 3: expected ',' or '}')"
            )
        }
        do {
            _ = try JSONValue.parse("[\"\u{E9}\u{E9}\", x]")
            Issue.record("parsed")
        } catch {
            #expect(error.line == 1)
            #expect(error.column == 8)  // columns count characters, not bytes
        }
    }

    @Test func errorDoesNotEchoData() {
        do {
            _ = try JSONValue.parse("{\"secret-key\":1,\"secret-key\":2}")
            Issue.record("parsed")
        } catch {
            #expect(error.reason == .duplicateKey)
            #expect(error.offset == 16)
            #expect(!error.userMessage.contains("secret"))
        }
    }

    @Test func duplicateKeysAreByExactBytes() throws {
        // Canonically-equivalent but different bytes: two distinct keys.
        let v = try JSONValue.parse("{\"\u{E9}\":1,\"e\u{301}\":2}")
        #expect(v.members?.count == 2)
        // Duplicates in big objects are found too (hash-set path).
        var text = "{"
        for i in 0..<100 { text += "\"k\(i)\":\(i)," }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text + "\"k57\":0}") }
        #expect(try JSONValue.parse(text + "\"k100\":0}").members?.count == 101)
    }

    @Test func objectsKeepMemberOrder() throws {
        let v = try JSONValue.parse("{\"b\":1,\"a\":2,\"c\":3}")
        #expect(v.members?.map(\.key) == ["b", "a", "c"])
    }

    @Test func depthLimit() throws {
        let deep = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(try JSONValue.parse(deep) != .null)
        let tooDeep = "[" + deep + "]"
        #expect(throws: JSONParseError(offset: 512, line: 1, column: 513, reason: .tooDeep(limit: 512))) {
            try JSONValue.parse(tooDeep)
        }
        let objects = String(repeating: "{\"a\":", count: 4) + "1" + String(repeating: "}", count: 4)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(objects, options: .init(maxDepth: 3)) }
        #expect(try JSONValue.parse(objects, options: .init(maxDepth: 4))["a"]?["a"]?["a"]?["a"] == 1)
        // Far beyond the limit: refused without exhausting the stack.
        let huge = String(repeating: "[", count: 1_000_000)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(huge) }
    }

    @Test func sizeLimit() throws {
        #expect(try JSONValue.parse("[1,2]", options: .init(maxBytes: 5)) == [1, 2])
        #expect(throws: JSONParseError(offset: 0, line: 1, column: 1, reason: .tooLarge(limit: 4))) {
            try JSONValue.parse("[1,2]", options: .init(maxBytes: 4))
        }
        // Non-contiguous collections are checked before they are copied.
        let lazyBytes = "[1,2]".utf8.lazy.map { $0 }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(lazyBytes, options: .init(maxBytes: 4)) }
        #expect(try JSONValue.parse(lazyBytes) == [1, 2])
    }

    @Test func commentsWhenAllowed() throws {
        let text = """
            // rules
            { /* block
               comment */ "a": [1, // one
              2] } // end
            """
        let options = JSONParseOptions(allowComments: true)
        #expect(try JSONValue.parse(text, options: options) == ["a": [1, 2]])
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse("1 /* open", options: options) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse("1 /", options: options) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse("1 /x", options: options) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse("// only a comment", options: options) }
    }

    /// The rules dialect keeps raw line breaks and tabs inside strings (both parse paths); other controls stay out.
    @Test func rulesDialectAcceptsLineBreaksInStrings() throws {
        let plain = "{\"v\": \"a\n\tb\r\nc\"}"
        let escaped = "{\"v\": \"\\u0041\n b\"}"
        #expect(try JSONValue.parse(plain, options: .rules) == ["v": "a\n\tb\r\nc"])
        #expect(try JSONValue.parse(escaped, options: .rules) == ["v": "A\n b"])
        #expect(throws: JSONParseError.self) { try JSONValue.parse(plain) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse("\"a\u{1}b\"", options: .rules) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse("\"a\u{1}\\nb\"", options: .rules) }
    }

    @Test func everyProperPrefixIsRefusedAndSplitsRejoin() throws {
        let text = "{\"a\":[1,-2.5e3,\"x\\u00e9\\n\u{E9}\"],\"b\":{\"c\":null,\"d\":true},\"e\":false}"
        let bytes = Array(text.utf8)
        let whole = try JSONValue.parse(bytes)
        for split in 0..<bytes.count {
            let prefix = bytes[..<split]
            do {
                _ = try JSONValue.parse(prefix)
                Issue.record("prefix of length \(split) parsed")
            } catch {
                #expect(error.offset <= split)
            }
            let rejoined = [prefix, bytes[split...]].joined()  // non-contiguous collection
            #expect(try JSONValue.parse(rejoined) == whole)
        }
    }

    @Test func randomMutationsThrowOrParse() {
        let seeds = [
            "{\"a\":[1,2.5,-3e-2,\"s\\u00e9\\ud83d\\ude00\"],\"b\":{\"c\":null,\"d\":[true,false,{}]}}",
            "[\"h\u{E9}llo\",0,-0.0,1e308,{\"k\":\"v\\n\"},[[[]]]]",
            "{\"x\": /* c */ 12345678901234567890, \"y\": \"\\\"q\\\"\"} // tail",
        ].map { Array($0.utf8) }
        var random = SplitMix64(seed: 0x5EED)
        var parsed = 0
        for iteration in 0..<4000 {
            var bytes = seeds[iteration % seeds.count]
            for _ in 0..<(1 + random.next(below: 3)) {
                mutate(&bytes, &random)
            }
            let options = JSONParseOptions(maxDepth: 8, allowComments: iteration % 2 == 0)
            do {
                let value = try JSONValue.parse(bytes, options: options)
                parsed += 1
                // Whatever parses must survive a round trip through the writer.
                #expect(try JSONValue.parse(value.serialized()) == value)
            } catch {
                #expect(error.offset >= 0 && error.offset <= bytes.count)
            }
        }
        #expect(parsed > 0)
    }

    private func mutate(_ bytes: inout [UInt8], _ random: inout SplitMix64) {
        let interesting: [UInt8] =
            Array("{}[]\",:\\/*-+.eE0119tfnu \n".utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xE2, 0xED, 0xF0, 0xFF]
        let position = bytes.isEmpty ? 0 : random.next(below: bytes.count)
        switch random.next(below: 4) {
        case 0 where !bytes.isEmpty: bytes[position] = interesting[random.next(below: interesting.count)]
        case 1: bytes.insert(interesting[random.next(below: interesting.count)], at: position)
        case 2 where !bytes.isEmpty: bytes.remove(at: position)
        default: bytes.removeSubrange(position...)
        }
    }
}


