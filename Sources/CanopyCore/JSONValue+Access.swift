// JSONValue+Access -- typed accessors that return nil when the value has another type.

extension JSONValue {
    /// The value of the member whose key has exactly `key`'s UTF-8 bytes, if this is an object.
    ///
    /// A linear scan: fine for small objects (requests, rules, claims). Index big objects yourself.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        for m in members where JSONKey.bytesEqual(m.key, key) { return m.value }
        return nil
    }

    /// The element at `index`, if this is an array and `index` is in range.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let items) = self, items.indices.contains(index) else { return nil }
        return items[index]
    }

    /// The string, if this is `.string`.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The boolean, if this is `.bool`.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The exact integer: `.int`, or a `.double` holding an integral value that fits Int64.
    public var int64Value: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d): return Int64(exactly: d)
        default: return nil
        }
    }

    /// Any number as a `Double` (large integers round to the nearest double).
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// Whether this is `.int` or `.double`.
    public var isNumber: Bool {
        switch self {
        case .int, .double: return true
        default: return false
        }
    }

    /// Whether this is `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The members, if this is an object.
    public var members: [JSONMember]? {
        if case .object(let m) = self { return m }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }
}
