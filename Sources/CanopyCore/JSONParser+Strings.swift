// JSONParser+Strings -- string literals: escapes, surrogate pairs, strict UTF-8, no raw control chars (but line
// breaks in the rules dialect).

extension JSONParser {
    /// A raw LF, CR or tab inside a string, allowed by `allowLineBreaksInStrings`.
    @inline(__always)
    func isAllowedBreak(_ b: UInt8) -> Bool {
        options.allowLineBreaksInStrings && (b == 0x0A || b == 0x0D || b == 0x09)
    }

    /// Parses a string literal starting at the opening quote; leaves `pos` after the closing quote.
    mutating func parseString() throws(JSONParseError) -> String {
        pos += 1
        let start = pos
        // Fast path: no escapes, the literal's bytes are the string's bytes.
        while pos < input.count {
            let b = input[pos]
            if b == 0x22 {  // "
                let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<pos]), as: UTF8.self)
                pos += 1
                return text
            }
            if b == 0x5C { break }  // backslash: take the slow path
            if b < 0x20 && !isAllowedBreak(b) { throw error(.controlCharacterInString, at: pos) }
            pos += b < 0x80 ? 1 : try utf8SequenceLength(at: pos)
        }
        guard pos < input.count else { throw error(.unexpectedEnd, at: pos) }

        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[start..<pos]))
        while pos < input.count {
            let b = input[pos]
            switch b {
            case 0x22:
                pos += 1
                return String(decoding: scratch, as: UTF8.self)
            case 0x5C:
                try parseEscape()
            case 0..<0x20 where !isAllowedBreak(b):
                throw error(.controlCharacterInString, at: pos)
            case 0..<0x80:
                scratch.append(b)
                pos += 1
            default:
                let length = try utf8SequenceLength(at: pos)
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: input[pos..<pos + length]))
                pos += length
            }
        }
        throw error(.unexpectedEnd, at: pos)
    }

    /// Decodes one escape at `pos` (the backslash) into `scratch`.
    private mutating func parseEscape() throws(JSONParseError) {
        let escapeStart = pos
        guard pos + 1 < input.count else { throw error(.unexpectedEnd, at: input.count) }
        let simple: UInt8
        switch input[pos + 1] {
        case UInt8(ascii: "\""): simple = 0x22
        case UInt8(ascii: "\\"): simple = 0x5C
        case UInt8(ascii: "/"): simple = 0x2F
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            pos += 2
            var scalar = try parseHex4()
            if scalar >= 0xD800 && scalar <= 0xDBFF {
                // A high surrogate must be followed by an escaped low surrogate.
                guard pos + 1 < input.count, input[pos] == 0x5C, input[pos + 1] == UInt8(ascii: "u") else {
                    throw error(.loneSurrogate, at: escapeStart)
                }
                pos += 2
                let low = try parseHex4()
                guard low >= 0xDC00 && low <= 0xDFFF else { throw error(.loneSurrogate, at: escapeStart) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                throw error(.loneSurrogate, at: escapeStart)
            }
            appendUTF8(scalar)
            return
        default:
            throw error(.invalidEscape, at: escapeStart)
        }
        scratch.append(simple)
        pos += 2
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard pos + 4 <= input.count else { throw error(.unexpectedEnd, at: input.count) }
        var value: UInt32 = 0
        for i in 0..<4 {
            let b = input[pos + i]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw error(.invalidEscape, at: pos + i)
            }
            value = value << 4 | UInt32(digit)
        }
        pos += 4
        return value
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }
}
