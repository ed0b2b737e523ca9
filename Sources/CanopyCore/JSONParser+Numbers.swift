// JSONParser+Numbers -- number literals: strict grammar, Int64 when integral and in range, else Double.
//
// Grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
// Doubles: when the significand has at most 19 digits and fits 2^53 and the decimal exponent is
// within ±22, `m * 10^e` / `m / 10^e` is exact in IEEE arithmetic (both operands exact, one rounding).
// Otherwise the literal goes to `Double(String)` (strtod in the C locale, correctly rounded).

/// 10^0 ... 10^22, all exactly representable (each step multiplies exact values exactly).
private let exactPowersOfTen: [Double] = {
    var powers: [Double] = [1]
    for _ in 1...22 { powers.append(powers[powers.count - 1] * 10) }
    return powers
}()

extension JSONParser {
    /// Parses a number starting at `pos` (a `-` or digit).
    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = pos
        if input[pos] == UInt8(ascii: "-") { pos += 1 }
        guard pos < input.count, isDigit(input[pos]) else { throw error(.invalidNumber, at: start) }
        if input[pos] == UInt8(ascii: "0") {
            pos += 1
            if pos < input.count && isDigit(input[pos]) { throw error(.leadingZero, at: start) }
        } else {
            skipDigits()
        }
        var isInteger = true
        if pos < input.count && input[pos] == UInt8(ascii: ".") {
            pos += 1
            guard pos < input.count, isDigit(input[pos]) else { throw error(.invalidNumber, at: start) }
            skipDigits()
            isInteger = false
        }
        if pos < input.count && (input[pos] | 0x20) == UInt8(ascii: "e") {
            pos += 1
            if pos < input.count && (input[pos] == UInt8(ascii: "+") || input[pos] == UInt8(ascii: "-")) { pos += 1 }
            guard pos < input.count, isDigit(input[pos]) else { throw error(.invalidNumber, at: start) }
            skipDigits()
            isInteger = false
        }
        let literal = UnsafeBufferPointer(rebasing: input[start..<pos])
        if isInteger, let value = Self.int64(literal) { return .int(value) }
        let value = Self.fastDouble(literal) ?? Double(String(decoding: literal, as: UTF8.self))
        guard let value else { throw error(.invalidNumber, at: start) }
        guard value.isFinite else { throw error(.numberOutOfRange, at: start) }
        return .double(value)
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while pos < input.count && isDigit(input[pos]) { pos += 1 }
    }

    /// An integer literal's value, or nil when it does not fit Int64.
    private static func int64(_ literal: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = literal[0] == UInt8(ascii: "-")
        // Accumulate negatively so Int64.min is representable.
        var acc: Int64 = 0
        for b in literal[(negative ? 1 : 0)...] {
            let (times10, o1) = acc.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.subtractingReportingOverflow(Int64(b &- UInt8(ascii: "0")))
            if o1 || o2 { return nil }
            acc = next
        }
        if negative { return acc }
        return acc == .min ? nil : -acc
    }

    /// The exactly-computable case of a grammatically valid literal, else nil.
    private static func fastDouble(_ literal: UnsafeBufferPointer<UInt8>) -> Double? {
        var i = 0
        let negative = literal[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        var mantissa: UInt64 = 0
        var digits = 0
        var exponent = 0
        var seenDot = false
        while i < literal.count {
            let b = literal[i]
            if b == UInt8(ascii: ".") {
                seenDot = true
            } else if b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") {
                if mantissa != 0 || b != UInt8(ascii: "0") { digits += 1 }
                if digits > 19 { return nil }
                mantissa = mantissa * 10 + UInt64(b - UInt8(ascii: "0"))
                if seenDot { exponent -= 1 }
            } else {
                break  // 'e' or 'E'
            }
            i += 1
        }
        if i < literal.count {
            i += 1
            var expNegative = false
            if literal[i] == UInt8(ascii: "-") || literal[i] == UInt8(ascii: "+") {
                expNegative = literal[i] == UInt8(ascii: "-")
                i += 1
            }
            var explicit = 0
            while i < literal.count {
                explicit = explicit * 10 + Int(literal[i] - UInt8(ascii: "0"))
                if explicit > 10_000 { return nil }
                i += 1
            }
            exponent += expNegative ? -explicit : explicit
        }
        if mantissa == 0 { return negative ? -0.0 : 0.0 }
        guard mantissa <= 1 << 53, exponent >= -22, exponent <= 22 else { return nil }
        var value = Double(mantissa)
        value = exponent < 0 ? value / exactPowersOfTen[-exponent] : value * exactPowersOfTen[exponent]
        return negative ? -value : value
    }
}
