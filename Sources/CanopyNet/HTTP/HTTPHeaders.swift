// HTTPHeaders -- an ordered list of header fields with case-insensitive lookup.

/// Header fields in arrival order. Names keep their original spelling; lookups ignore ASCII case.
public struct HTTPHeaders: Sendable, Sequence {
    /// The fields, in order.
    public private(set) var fields: [(name: String, value: String)]

    /// Creates a header list from `fields`.
    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    /// Appends a field.
    public mutating func add(name: String, value: String) {
        fields.append((name, value))
    }

    /// The value of the first field called `name` (ASCII case-insensitive), or nil.
    public func first(_ name: String) -> String? {
        fields.first { Self.namesEqual($0.name, name) }?.value
    }

    /// The values of every field called `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.namesEqual($0.name, name) }.map(\.value)
    }

    /// True when a comma-separated field called `name` lists `token` (ASCII case-insensitive),
    /// as in `Connection: keep-alive, Upgrade`.
    public func containsToken(_ token: String, in name: String) -> Bool {
        values(name).contains { value in
            value.split(separator: ",").contains { element in
                Self.namesEqual(element.trimmingSpacesAndTabs(), token)
            }
        }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    /// ASCII case-insensitive comparison (header names and tokens are ASCII).
    static func namesEqual<A: StringProtocol, B: StringProtocol>(_ a: A, _ b: B) -> Bool {
        let x = a.utf8
        let y = b.utf8
        guard x.count == y.count else { return false }
        // Native strings compare over their bytes in place (a zip of two UTF8Views walks indices: a request's
        // header look-ups were 1 % of a REST write's loop time).
        let inPlace = x.withContiguousStorageIfAvailable { x in
            y.withContiguousStorageIfAvailable { y in bytesEqualIgnoringASCIICase(x, y) }
        }
        if let equal = inPlace ?? nil { return equal }
        return zip(x, y).allSatisfy { lowercasedASCII($0) == lowercasedASCII($1) }
    }

    /// Whether two byte runs of the same length are equal, ASCII letters compared case-insensitively.
    private static func bytesEqualIgnoringASCIICase(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>)
        -> Bool
    {
        for index in 0..<x.count where x[index] != y[index] {
            guard lowercasedASCII(x[index]) == lowercasedASCII(y[index]) else { return false }
        }
        return true
    }

    static func lowercasedASCII(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte | 0x20 : byte
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingSpacesAndTabs() -> Substring {
        let characters = Substring(self)
        let isWhitespace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = characters.firstIndex(where: { !isWhitespace($0) }),
            let end = characters.lastIndex(where: { !isWhitespace($0) })
        else { return "" }
        return characters[start...end]
    }
}
