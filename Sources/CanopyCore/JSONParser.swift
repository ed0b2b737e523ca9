// JSONParser -- strict RFC 8259 parser from UTF-8 bytes to `JSONValue`.
//
// Grammar: RFC 8259 exactly, plus optional `//` and `/* */` comments (rules files).
// Refused: empty input, trailing commas, leading zeros, NaN/Infinity, numbers that round to ±inf,
// invalid UTF-8 anywhere (strict: no overlongs, no encoded surrogates, nothing above U+10FFFF),
// unescaped control characters in strings, unpaired surrogate escapes, duplicate keys (exact bytes),
// data after the value, nesting deeper than `maxDepth`, documents larger than `maxBytes`.
//
// The parser is iterative: containers under construction live on explicit stacks, so depth costs
// heap, not call stack. Every byte is looked at a bounded number of times (linear time); escaped
// strings are assembled in one reused scratch buffer. Integer literals that fit Int64 become `.int`,
// every other number `.double` (correctly rounded: exact fast path, else the C library's strtod).

extension JSONValue {
    /// Parses one JSON document from UTF-8 bytes.
    ///
    /// A pure function, safe to fuzz: any input either parses or throws.
    /// - Parameters:
    ///   - bytes: The document, UTF-8 encoded, without a byte-order mark.
    ///   - options: Limits and the comment switch.
    /// - Returns: The document's value.
    /// - Throws: `JSONParseError` with the offset, line:column and reason of the first problem.
    public static func parse(
        _ bytes: some Collection<UInt8>, options: JSONParseOptions = .init()
    ) throws(JSONParseError) -> JSONValue {
        let contiguous = bytes.withContiguousStorageIfAvailable { buffer in
            parseResult(buffer, options)
        }
        if let result = contiguous { return try result.get() }
        if bytes.count > options.maxBytes {
            throw JSONParseError(offset: 0, line: 1, column: 1, reason: .tooLarge(limit: options.maxBytes))
        }
        return try Array(bytes).withUnsafeBufferPointer { parseResult($0, options) }.get()
    }

    /// Parses one JSON document from a string (see `parse(_:options:)` for bytes).
    public static func parse(_ text: String, options: JSONParseOptions = .init()) throws(JSONParseError)
        -> JSONValue
    {
        var text = text
        return try text.withUTF8 { parseResult($0, options) }.get()
    }

    private static func parseResult(_ buffer: UnsafeBufferPointer<UInt8>, _ options: JSONParseOptions)
        -> Result<JSONValue, JSONParseError>
    {
        var parser = JSONParser(input: buffer, options: options)
        do throws(JSONParseError) {
            return .success(try parser.parseDocument())
        } catch {
            return .failure(error)
        }
    }
}

private enum Byte {
    static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), slash = UInt8(ascii: "/")
    static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
    static let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")
    static let comma = UInt8(ascii: ","), colon = UInt8(ascii: ":"), star = UInt8(ascii: "*")
    static let minus = UInt8(ascii: "-"), plus = UInt8(ascii: "+"), dot = UInt8(ascii: ".")
    static let zero = UInt8(ascii: "0"), nine = UInt8(ascii: "9")
    static let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t"), newline = UInt8(ascii: "\n")
    static let carriageReturn = UInt8(ascii: "\r")
}

/// An object under construction: members so far, the key awaiting its value, and (for big
/// objects) a byte-exact key set for duplicate detection.
private struct ObjectBuilder {
    var members: [JSONMember] = []
    var pendingKey: String
    var keys: Set<JSONKey>? = nil
    static let linearLimit = 16

    init(firstKey: String) { pendingKey = firstKey }

    /// Records `key` as the next pending key; false if it repeats an earlier one.
    mutating func setPendingKey(_ key: String) -> Bool {
        if keys == nil && members.count >= ObjectBuilder.linearLimit {
            keys = Set(members.lazy.map { JSONKey($0.key) })
        }
        if keys != nil {
            guard keys!.insert(JSONKey(key)).inserted else { return false }
        } else {
            for m in members where JSONKey.bytesEqual(m.key, key) { return false }
        }
        pendingKey = key
        return true
    }
}

struct JSONParser {
    let input: UnsafeBufferPointer<UInt8>
    let options: JSONParseOptions
    var pos = 0
    /// Reused buffer for strings that contain escapes.
    var scratch: [UInt8] = []

    init(input: UnsafeBufferPointer<UInt8>, options: JSONParseOptions) {
        self.input = input
        self.options = options
    }

    func error(_ reason: JSONParseError.Reason, at offset: Int) -> JSONParseError {
        var line = 1
        var column = 1
        for b in input[..<min(offset, input.count)] {
            if b == Byte.newline {
                line += 1
                column = 1
            } else if b & 0xC0 != 0x80 {
                column += 1
            }
        }
        return JSONParseError(offset: offset, line: line, column: column, reason: reason)
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        if input.count > options.maxBytes { throw error(.tooLarge(limit: options.maxBytes), at: 0) }
        try skipWhitespace()
        if pos == input.count { throw error(.emptyInput, at: pos) }
        let value = try parseTree()
        try skipWhitespace()
        if pos != input.count { throw error(.trailingGarbage, at: pos) }
        return value
    }

    // MARK: Structure

    private mutating func parseTree() throws(JSONParseError) -> JSONValue {
        var isObjectStack: [Bool] = []
        var arrays: [[JSONValue]] = []
        var objects: [ObjectBuilder] = []

        nextValue: while true {
            try skipWhitespace()
            guard pos < input.count else { throw error(.unexpectedEnd, at: pos) }
            var value: JSONValue
            switch input[pos] {
            case Byte.openBrace:
                if isObjectStack.count >= options.maxDepth { throw error(.tooDeep(limit: options.maxDepth), at: pos) }
                pos += 1
                try skipWhitespace()
                if pos < input.count && input[pos] == Byte.closeBrace {
                    pos += 1
                    value = .object([])
                } else {
                    let key = try parseKey(expected: "a string key or '}'")
                    isObjectStack.append(true)
                    objects.append(ObjectBuilder(firstKey: key))
                    continue nextValue
                }
            case Byte.openBracket:
                if isObjectStack.count >= options.maxDepth { throw error(.tooDeep(limit: options.maxDepth), at: pos) }
                pos += 1
                try skipWhitespace()
                if pos < input.count && input[pos] == Byte.closeBracket {
                    pos += 1
                    value = .array([])
                } else {
                    isObjectStack.append(false)
                    arrays.append([])
                    continue nextValue
                }
            case Byte.quote: value = .string(try parseString())
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                value = .null
            case Byte.minus, Byte.zero...Byte.nine: value = try parseNumber()
            default: throw error(.unexpected(expected: "a value"), at: pos)
            }

            // Attach the finished value to the innermost open container, closing containers as we go.
            while let isObject = isObjectStack.last {
                try skipWhitespace()
                guard pos < input.count else { throw error(.unexpectedEnd, at: pos) }
                let b = input[pos]
                if isObject {
                    let top = objects.count - 1
                    objects[top].members.append(JSONMember(objects[top].pendingKey, value))
                    if b == Byte.comma {
                        pos += 1
                        try skipWhitespace()
                        if pos < input.count && input[pos] == Byte.closeBrace { throw error(.trailingComma, at: pos) }
                        let keyOffset = pos
                        let key = try parseKey(expected: "a string key")
                        if !objects[top].setPendingKey(key) { throw error(.duplicateKey, at: keyOffset) }
                        continue nextValue
                    }
                    guard b == Byte.closeBrace else { throw error(.unexpected(expected: "',' or '}'"), at: pos) }
                    pos += 1
                    isObjectStack.removeLast()
                    value = .object(objects.removeLast().members)
                } else {
                    arrays[arrays.count - 1].append(value)
                    if b == Byte.comma {
                        pos += 1
                        try skipWhitespace()
                        if pos < input.count && input[pos] == Byte.closeBracket {
                            throw error(.trailingComma, at: pos)
                        }
                        continue nextValue
                    }
                    guard b == Byte.closeBracket else { throw error(.unexpected(expected: "',' or ']'"), at: pos) }
                    pos += 1
                    isObjectStack.removeLast()
                    value = .array(arrays.removeLast())
                }
            }
            return value
        }
    }

    /// Parses `"key"` `:` and leaves `pos` after the colon.
    private mutating func parseKey(expected: String) throws(JSONParseError) -> String {
        guard pos < input.count else { throw error(.unexpectedEnd, at: pos) }
        guard input[pos] == Byte.quote else { throw error(.unexpected(expected: expected), at: pos) }
        let key = try parseString()
        try skipWhitespace()
        guard pos < input.count else { throw error(.unexpectedEnd, at: pos) }
        guard input[pos] == Byte.colon else { throw error(.unexpected(expected: "':'"), at: pos) }
        pos += 1
        return key
    }

    private mutating func expectLiteral(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        let bytes = UnsafeBufferPointer(start: word.utf8Start, count: count)
        for i in 0..<count {
            guard pos + i < input.count else { throw error(.unexpectedEnd, at: pos + i) }
            guard input[pos + i] == bytes[i] else { throw error(.unexpected(expected: "a value"), at: pos) }
        }
        pos += count
    }

    // MARK: Whitespace and comments

    private mutating func skipWhitespace() throws(JSONParseError) {
        while pos < input.count {
            switch input[pos] {
            case Byte.space, Byte.tab, Byte.newline, Byte.carriageReturn:
                pos += 1
            case Byte.slash where options.allowComments:
                try skipComment()
            default:
                return
            }
        }
    }

    private mutating func skipComment() throws(JSONParseError) {
        let start = pos
        guard pos + 1 < input.count else { throw error(.unexpected(expected: "a comment"), at: pos) }
        switch input[pos + 1] {
        case Byte.slash:
            pos += 2
            while pos < input.count && input[pos] != Byte.newline { try skipCharacter() }
        case Byte.star:
            pos += 2
            while true {
                guard pos < input.count else { throw error(.unterminatedComment, at: start) }
                if input[pos] == Byte.star && pos + 1 < input.count && input[pos + 1] == Byte.slash {
                    pos += 2
                    return
                }
                try skipCharacter()
            }
        default:
            throw error(.unexpected(expected: "a comment"), at: pos)
        }
    }

    /// Steps over one character inside a comment, validating its UTF-8.
    private mutating func skipCharacter() throws(JSONParseError) {
        if input[pos] < 0x80 { pos += 1 } else { pos += try utf8SequenceLength(at: pos) }
    }

    // MARK: UTF-8

    /// The length of the strictly valid UTF-8 sequence starting with a non-ASCII byte at `i`.
    func utf8SequenceLength(at i: Int) throws(JSONParseError) -> Int {
        let lead = input[i]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            high = 0x9F  // no UTF-8 encoded surrogates
        case 0xF0:
            length = 4
            low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            high = 0x8F  // nothing above U+10FFFF
        default: throw error(.invalidUTF8, at: i)
        }
        guard i + length <= input.count else { throw error(.invalidUTF8, at: i) }
        let second = input[i + 1]
        guard second >= low && second <= high else { throw error(.invalidUTF8, at: i) }
        for k in 2..<max(length, 2) where input[i + k] & 0xC0 != 0x80 { throw error(.invalidUTF8, at: i) }
        return length
    }
}
