// Base64 -- RFC 4648 standard (`+/`, padded) and URL-safe (`-_`, padding optional) codecs.
//
// Decoding is strict: only the variant's alphabet, `=` only as final padding and only as much as
// the length requires, no whitespace, and the unused low bits of the last symbol must be zero
// (so each byte string has exactly one accepted encoding, modulo optional url padding).

/// Base64 encoding and strict decoding (RFC 4648 §4 and §5).
public enum Base64 {
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let invalid: UInt8 = 0xFF

    private static func decodingTable(_ alphabet: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: invalid, count: 256)
        for (i, symbol) in alphabet.enumerated() { table[Int(symbol)] = UInt8(i) }
        return table
    }
    private static let standardTable = decodingTable(standardAlphabet)
    private static let urlTable = decodingTable(urlAlphabet)

    /// Encodes `bytes`.
    /// - Parameters:
    ///   - url: Use the URL-safe alphabet (`-_` instead of `+/`), as JWTs do.
    ///   - padding: Append `=` to a multiple of four characters (JWTs use `url: true, padding: false`).
    public static func encode(_ bytes: some Collection<UInt8>, url: Bool = false, padding: Bool = true) -> String {
        let alphabet = url ? urlAlphabet : standardAlphabet
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let b0 = iterator.next() {
            let b1 = iterator.next()
            let b2 = b1 == nil ? nil : iterator.next()
            let group = UInt32(b0) << 16 | UInt32(b1 ?? 0) << 8 | UInt32(b2 ?? 0)
            out.append(alphabet[Int(group >> 18 & 63)])
            out.append(alphabet[Int(group >> 12 & 63)])
            if b1 != nil {
                out.append(alphabet[Int(group >> 6 & 63)])
            } else if padding {
                out.append(UInt8(ascii: "="))
            }
            if b2 != nil { out.append(alphabet[Int(group & 63)]) } else if padding { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes `text` strictly, or returns nil.
    /// - Parameters:
    ///   - text: Base64 text without whitespace.
    ///   - url: Expect the URL-safe alphabet; padding is then optional (but, if present, must be correct).
    ///     The standard variant requires padding.
    /// - Returns: The bytes, or nil for a bad character, bad length, bad padding or non-zero trailing bits.
    public static func decode(_ text: some StringProtocol, url: Bool) -> [UInt8]? {
        let table = url ? urlTable : standardTable
        var symbols = Array(text.utf8)
        var padded = 0
        while padded < 2, symbols.last == UInt8(ascii: "=") {
            symbols.removeLast()
            padded += 1
        }
        let remainder = symbols.count % 4
        if remainder == 1 { return nil }
        if padded > 0 || !url {
            // Padding present (or mandatory): it must complete the last group exactly.
            guard (symbols.count + padded) % 4 == 0, padded == (4 - remainder) % 4 else { return nil }
        }
        var out: [UInt8] = []
        out.reserveCapacity(symbols.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for symbol in symbols {
            let value = table[Int(symbol)]
            if value == invalid { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits (2 or 4) must be zero.
        if accumulator != 0 { return nil }
        return out
    }
}
