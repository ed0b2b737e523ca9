// LeafCodec -- JSON text for the primitives stored in leaf and priority columns.
//
// Format: exactly one JSON primitive (RFC 8259): `true`, `false`, a number, or a string. An integer
// that fits Int64 is written without a fraction and reads back as `.int`; a double is written by
// Swift's shortest round-trip formatting, which always contains `.` or `e` (`3.0`, `1e+20`), and
// reads back as `.double`. Strings escape `"`, `\` and control characters, nothing else.
//
// This is a private stand-in until CanopyCore's JSON writer/parser lands; the stored text is plain
// JSON either way, so switching changes no file.
import CanopyCore

enum LeafCodec {
    /// The JSON text of a primitive.
    ///
    /// - Throws: `.invalidMutation` for null, arrays, objects and non-finite doubles.
    static func encode(_ value: JSONValue, path: [String]) throws(StoreError) -> String {
        switch value {
        case .bool(let flag): return flag ? "true" : "false"
        case .int(let number): return String(number)
        case .double(let number):
            guard number.isFinite else {
                throw StoreError(.invalidMutation, "a stored number must be finite", location: display(path))
            }
            return "\(number)"
        case .string(let text): return quote(text)
        case .null, .array, .object:
            throw StoreError(.invalidMutation, "only a string, number or boolean can be stored", location: display(path))
        }
    }

    /// The primitive written by `encode`.
    ///
    /// - Throws: `.corrupt` when `text` is not one JSON primitive.
    static func decode(_ text: String, key: String) throws(StoreError) -> JSONValue {
        let corrupt = StoreError(.corrupt, "stored value is not a JSON primitive", location: "/" + key)
        switch text.utf8.first {
        case UInt8(ascii: "\""):
            guard let string = unquote(text) else { throw corrupt }
            return .string(string)
        case UInt8(ascii: "t") where text == "true": return .bool(true)
        case UInt8(ascii: "f") where text == "false": return .bool(false)
        case .some(UInt8(ascii: "-")), .some(UInt8(ascii: "0")...UInt8(ascii: "9")):
            let isInteger = text.utf8.allSatisfy { $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) }
            if isInteger, let integer = Int64(text) { return .int(integer) }
            guard let double = Double(text), double.isFinite else { throw corrupt }
            return .double(double)
        default:
            throw corrupt
        }
    }

    /// A path as shown in errors: "/a/b" ("/" for the root).
    static func display(_ path: [String]) -> String { "/" + path.joined(separator: "/") }

    private static func quote(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }

    /// Reads a JSON string literal (the whole of `text`). Returns nil when it is malformed.
    private static func unquote(_ text: String) -> String? {
        var scalars = text.unicodeScalars.makeIterator()
        guard scalars.next() == "\"" else { return nil }
        var out = String.UnicodeScalarView()
        var pendingHigh: UInt32?
        while let scalar = scalars.next() {
            if pendingHigh != nil, scalar != "\\" { return nil }
            switch scalar {
            case "\"":
                return scalars.next() == nil && pendingHigh == nil ? String(out) : nil
            case "\\":
                guard let escaped = scalars.next() else { return nil }
                if pendingHigh != nil, escaped != "u" { return nil }
                switch escaped {
                case "\"", "\\", "/": out.append(escaped)
                case "b": out.append("\u{08}")
                case "f": out.append("\u{0C}")
                case "n": out.append("\n")
                case "r": out.append("\r")
                case "t": out.append("\t")
                case "u":
                    var code: UInt32 = 0
                    for _ in 0..<4 {
                        guard let digit = scalars.next(), let value = hexValue(digit) else { return nil }
                        code = code << 4 | value
                    }
                    if let high = pendingHigh {
                        guard (0xDC00...0xDFFF).contains(code) else { return nil }
                        pendingHigh = nil
                        code = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)
                    } else if (0xD800...0xDBFF).contains(code) {
                        pendingHigh = code
                        continue
                    }
                    guard let decoded = Unicode.Scalar(code) else { return nil }
                    out.append(decoded)
                default: return nil
                }
            case _ where scalar.value < 0x20: return nil
            default: out.append(scalar)
            }
        }
        return nil
    }

    private static func hexValue(_ scalar: Unicode.Scalar) -> UInt32? {
        switch scalar.value {
        case 0x30...0x39: scalar.value - 0x30
        case 0x41...0x46: scalar.value - 0x41 + 10
        case 0x61...0x66: scalar.value - 0x61 + 10
        default: nil
        }
    }
}
