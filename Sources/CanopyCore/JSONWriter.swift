// JSONWriter -- serializes `JSONValue` to UTF-8 JSON, compact or pretty (2-space indent).
//
// Strings: `"` and `\` are escaped, control characters as \b \f \n \r \t or \u00XX, and U+2028 /
// U+2029 as \u2028 / \u2029 (they end lines in JavaScript source); other non-ASCII stays UTF-8.
// Numbers: `.int` in decimal, `.double` as JavaScript prints it (`JSONNumberFormat`).
// Pretty output matches `JSON.stringify(value, null, 2)`: `{}`/`[]` when empty, `"key": value`.

extension JSONValue {
    /// The JSON text of this value.
    ///
    /// - Parameter pretty: Indent nested values by two spaces per level, one member per line.
    public func serialized(pretty: Bool = false) -> String {
        var out: [UInt8] = []
        write(into: &out, pretty: pretty)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the JSON text of this value to `out`.
    ///
    /// - Parameters:
    ///   - out: The buffer to append to.
    ///   - pretty: Indent nested values by two spaces per level, one member per line.
    public func write(into out: inout [UInt8], pretty: Bool = false) {
        write(into: &out, pretty: pretty, indent: 0)
    }

    /// The JSON string literal for `s`, quotes included.
    public static func quoted(_ s: String) -> String {
        var out: [UInt8] = []
        writeQuoted(s, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the JSON string literal for `s`, quotes included, to `out`.
    public static func writeQuoted(_ s: String, into out: inout [UInt8]) {
        var s = s
        s.withUTF8 { writeQuoted(utf8: $0, into: &out) }
    }

    private func write(into out: inout [UInt8], pretty: Bool, indent: Int) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): JSONNumberFormat.appendInteger(i, into: &out)
        case .double(let d): JSONNumberFormat.write(d, into: &out)
        case .string(let s): JSONValue.writeQuoted(s, into: &out)
        case .array(let items):
            guard !items.isEmpty else {
                out.append(contentsOf: "[]".utf8)
                return
            }
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if pretty { Self.newline(&out, indent + 1) }
                item.write(into: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { Self.newline(&out, indent) }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else {
                out.append(contentsOf: "{}".utf8)
                return
            }
            out.append(UInt8(ascii: "{"))
            for (i, member) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if pretty { Self.newline(&out, indent + 1) }
                JSONValue.writeQuoted(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                if pretty { out.append(UInt8(ascii: " ")) }
                member.value.write(into: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { Self.newline(&out, indent) }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func newline(_ out: inout [UInt8], _ indent: Int) {
        out.append(UInt8(ascii: "\n"))
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * indent))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeQuoted(utf8 bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        writeEscaped(utf8: bytes, into: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// Appends `bytes` escaped as the inside of a JSON string literal, without the quotes.
    static func writeEscaped(utf8 bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        var runStart = 0
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            let escape: StaticString?
            var length = 1
            switch b {
            case 0x22: escape = "\\\""
            case 0x5C: escape = "\\\\"
            case 0x08: escape = "\\b"
            case 0x0C: escape = "\\f"
            case 0x0A: escape = "\\n"
            case 0x0D: escape = "\\r"
            case 0x09: escape = "\\t"
            case 0..<0x20: escape = nil  // \u00XX below
            case 0xE2 where i + 2 < bytes.count && bytes[i + 1] == 0x80 && (bytes[i + 2] | 1) == 0xA9:
                escape = bytes[i + 2] == 0xA8 ? "\\u2028" : "\\u2029"
                length = 3
            default:
                i += 1
                continue
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
            if let escape {
                out.append(contentsOf: UnsafeBufferPointer(start: escape.utf8Start, count: escape.utf8CodeUnitCount))
            } else {
                out.append(contentsOf: "\\u00".utf8)
                out.append(hexDigits[Int(b >> 4)])
                out.append(hexDigits[Int(b & 0xF)])
            }
            i += length
            runStart = i
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
    }

    /// Appends `path.description` as a JSON string literal, quotes included, without making the string.
    public static func writeQuoted(_ path: Path, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        if path.isRoot { out.append(UInt8(ascii: "/")) }
        for segment in path.segments {
            out.append(UInt8(ascii: "/"))
            var segment = segment
            segment.withUTF8 { writeEscaped(utf8: $0, into: &out) }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text.
    public var description: String { serialized() }
}
