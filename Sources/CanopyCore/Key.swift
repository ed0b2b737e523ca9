// Key -- Firebase key validation and key ordering (`nameCompare`).
//
// Validity (Protocol.md#Keys-and-paths): a key is a non-empty string of at most 768 UTF-8 bytes that contains none
// of `. $ # [ ] /` and no ASCII control character (U+0000–U+001F, U+007F).
//
// Ordering (Protocol.md#Key-ordering): keys that look like 32-bit integers (`^-?0*\d{1,10}$` and within Int32)
// sort first, numerically, numeric ties broken by length (shorter first); every other key follows in UTF-16
// code-unit order.
// Two distinct integer-like keys can tie on both value and length (`"-0"` and `"00"`); the JavaScript SDK calls
// them equal, which would merge distinct keys, so Canopy breaks that last tie by code-unit order. The result is a
// total order in which only byte-identical keys compare equal.
//
// UTF-16 order is computed on the UTF-8 bytes: byte order equals scalar order, and scalar order differs from
// UTF-16 order only when a supplementary-plane scalar (UTF-8 lead byte F0–F4, UTF-16 surrogates D800–DBFF) meets
// a scalar in U+E000–U+FFFF (lead byte EE or EF) at the first difference. That one case is swapped.

/// Key validation and the names Firebase gives to metadata keys.
public enum Key {
    /// The largest key, in UTF-8 bytes.
    public static let maxBytes = 768
    /// The metadata key holding a node's priority.
    public static let priority = ".priority"
    /// The metadata key holding a leaf's value in export form.
    public static let value = ".value"
    /// The metadata key marking a server value placeholder.
    public static let serverValue = ".sv"

    /// Whether `key` may name a stored child.
    public static func isValid(_ key: String) -> Bool {
        var count = 0
        for byte in key.utf8 {
            count += 1
            switch byte {
            case 0x00...0x1F, 0x7F, UInt8(ascii: "."), UInt8(ascii: "$"), UInt8(ascii: "#"), UInt8(ascii: "["),
                UInt8(ascii: "]"), UInt8(ascii: "/"):
                return false
            default: continue
            }
        }
        return count > 0 && count <= maxBytes
    }

    /// The key's value when it is integer-like in Firebase's sense (`^-?0*\d{1,10}$` within Int32), else nil.
    public static func integerValue(_ key: String) -> Int32? {
        let utf8 = key.utf8
        if let result = utf8.withContiguousStorageIfAvailable({ integerValue(bytes: $0) }) { return result }
        return integerValue(bytes: Array(utf8))
    }

    static func integerValue(bytes: some RandomAccessCollection<UInt8>) -> Int32? {
        var i = bytes.startIndex
        guard i != bytes.endIndex else { return nil }
        let negative = bytes[i] == UInt8(ascii: "-")
        if negative { i = bytes.index(after: i) }
        let digitCount = bytes.distance(from: i, to: bytes.endIndex)
        guard digitCount >= 1 else { return nil }
        // `0*\d{1,10}`: everything before the last ten digits must be zeros.
        var value: Int64 = 0
        var position = 0
        while i != bytes.endIndex {
            let byte = bytes[i]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            if digitCount - position > 10 {
                guard byte == UInt8(ascii: "0") else { return nil }
            } else {
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            position += 1
            i = bytes.index(after: i)
        }
        if negative { value = -value }
        guard value >= Int64(Int32.min), value <= Int64(Int32.max) else { return nil }
        return Int32(value)
    }
}

/// Compares two keys in Firebase key order (`nameCompare`): negative, zero (identical bytes only) or positive.
///
/// Integer-like keys come first, numerically (`"2" < "10"`; `"7" < "007"`), then all other keys in UTF-16
/// code-unit order. `"2147483648"` is outside Int32 and therefore an ordinary string.
public func compareKeys(_ a: String, _ b: String) -> Int {
    let ua = a.utf8
    let ub = b.utf8
    if let r = ua.withContiguousStorageIfAvailable({ pa in
        ub.withContiguousStorageIfAvailable({ pb in compareKeyBytes(pa, pb) })
    }), let result = r {
        return result
    }
    return Array(ua).withUnsafeBufferPointer { pa in
        Array(ub).withUnsafeBufferPointer { pb in compareKeyBytes(pa, pb) }
    }
}

/// Compares two strings by UTF-16 code units, as JavaScript's `<` and Java's `compareTo` do.
public func compareUTF16(_ a: String, _ b: String) -> Int {
    let ua = a.utf8
    let ub = b.utf8
    if let r = ua.withContiguousStorageIfAvailable({ pa in
        ub.withContiguousStorageIfAvailable({ pb in compareUTF16Bytes(pa, pb) })
    }), let result = r {
        return result
    }
    return Array(ua).withUnsafeBufferPointer { pa in
        Array(ub).withUnsafeBufferPointer { pb in compareUTF16Bytes(pa, pb) }
    }
}

func compareKeyBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
    // Fast path: a key starting with a letter (most keys, and all push IDs but for '-') is never integer-like.
    let aMaybeInt = a.first.map(startsIntegerLike) ?? false
    let bMaybeInt = b.first.map(startsIntegerLike) ?? false
    let ai = aMaybeInt ? Key.integerValue(bytes: a) : nil
    let bi = bMaybeInt ? Key.integerValue(bytes: b) : nil
    switch (ai, bi) {
    case (let x?, let y?):
        if x != y { return x < y ? -1 : 1 }
        if a.count != b.count { return a.count < b.count ? -1 : 1 }
        return compareUTF16Bytes(a, b)
    case (.some, nil): return -1
    case (nil, .some): return 1
    case (nil, nil): return compareUTF16Bytes(a, b)
    }
}

@inline(__always)
private func startsIntegerLike(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
}

func compareUTF16Bytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
    let n = min(a.count, b.count)
    var i = 0
    while i < n && a[i] == b[i] { i += 1 }
    if i == n { return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1) }
    let x = a[i]
    let y = b[i]
    // Both bytes start a scalar (no continuation byte 10xxxxxx) -> the differing scalars begin here.
    if x & 0xC0 != 0x80 && y & 0xC0 != 0x80 {
        let xAstral = x >= 0xF0
        let yAstral = y >= 0xF0
        let xHighBMP = x == 0xEE || x == 0xEF
        let yHighBMP = y == 0xEE || y == 0xEF
        if xAstral && yHighBMP { return -1 }  // surrogate D800–DBFF < E000–FFFF
        if yAstral && xHighBMP { return 1 }
    }
    return x < y ? -1 : 1
}
