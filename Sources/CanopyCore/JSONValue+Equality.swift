// JSONValue+Equality -- numeric equality across .int/.double and order-free object equality.
//
// Numbers: `.int(a) == .double(b)` when `b` is exactly the integer `a`. Hashing agrees: a double
// that is exactly an Int64 hashes as that integer (so `-0.0`, `0.0` and `.int(0)` hash alike).
// Objects: unordered sets of members; keys compare by exact UTF-8 bytes (`JSONKey`), never by
// Swift `String ==`, which treats canonically-equivalent strings as equal.

extension JSONValue: Equatable {
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)): return Int64(exactly: b) == a
        case (.string(let a), .string(let b)): return JSONKey.bytesEqual(a, b)
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)): return membersEqual(a, b)
        default: return false
        }
    }

    private static func membersEqual(_ a: [JSONMember], _ b: [JSONMember]) -> Bool {
        guard a.count == b.count else { return false }
        if a.count <= 8 {
            // Keys are unique, so a one-way match of every member proves set equality.
            outer: for m in a {
                for n in b where JSONKey.bytesEqual(m.key, n.key) {
                    guard m.value == n.value else { return false }
                    continue outer
                }
                return false
            }
            return true
        }
        var index: [JSONKey: Int] = [:]
        index.reserveCapacity(b.count)
        for (i, n) in b.enumerated() { index[JSONKey(n.key)] = i }
        for m in a {
            guard let i = index[JSONKey(m.key)], b[i].value == m.value else { return false }
        }
        return true
    }
}

extension JSONValue: Hashable {
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0 as UInt8)
        case .bool(let b):
            hasher.combine(1 as UInt8)
            hasher.combine(b)
        case .int(let i):
            hasher.combine(2 as UInt8)
            hasher.combine(i)
        case .double(let d):
            if let i = Int64(exactly: d) {
                hasher.combine(2 as UInt8)
                hasher.combine(i)
            } else {
                hasher.combine(3 as UInt8)
                hasher.combine(d)
            }
        case .string(let s):
            hasher.combine(4 as UInt8)
            JSONKey(s).hash(into: &hasher)
        case .array(let items):
            hasher.combine(5 as UInt8)
            hasher.combine(items.count)
            for item in items { item.hash(into: &hasher) }
        case .object(let members):
            // Order-independent: sum the members' own hashes.
            var sum = 0
            for m in members {
                var h = Hasher()
                JSONKey(m.key).hash(into: &h)
                m.value.hash(into: &h)
                sum &+= h.finalize()
            }
            hasher.combine(6 as UInt8)
            hasher.combine(members.count)
            hasher.combine(sum)
        }
    }
}

extension JSONMember: Equatable, Hashable {
    /// Members are equal when their keys have the same UTF-8 bytes and their values are equal.
    public static func == (lhs: JSONMember, rhs: JSONMember) -> Bool {
        JSONKey.bytesEqual(lhs.key, rhs.key) && lhs.value == rhs.value
    }
    public func hash(into hasher: inout Hasher) {
        JSONKey(key).hash(into: &hasher)
        value.hash(into: &hasher)
    }
}

/// A string compared and hashed by its exact UTF-8 bytes, for Firebase keys.
///
/// Swift `String` equality is canonical-equivalence based (`"é" == "e\u{301}"`); Firebase treats
/// those as two different keys. Use `JSONKey` as a `Dictionary`/`Set` key wherever keys must stay distinct.
public struct JSONKey: Hashable, Sendable, CustomStringConvertible {
    /// The key text.
    public let string: String
    /// Wraps `string`.
    public init(_ string: String) { self.string = string }

    public static func == (lhs: JSONKey, rhs: JSONKey) -> Bool { bytesEqual(lhs.string, rhs.string) }

    public func hash(into hasher: inout Hasher) {
        var s = string
        s.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(s.utf8.count)
    }

    public var description: String { string }

    /// Whether two strings have identical UTF-8 bytes.
    public static func bytesEqual(_ a: String, _ b: String) -> Bool {
        sameKey(a, b)
    }
}

extension JSONValue {
    /// Whether two optional primitives are the very same value: the same case, numbers by their bits, strings
    /// byte for byte (stricter than `==`, for which `1 == 1.0`).
    public static func identical(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (.bool(let x)?, .bool(let y)?): x == y
        case (.int(let x)?, .int(let y)?): x == y
        case (.double(let x)?, .double(let y)?): x.bitPattern == y.bitPattern
        case (.string(let x)?, .string(let y)?): JSONKey.bytesEqual(x, y)
        default: false
        }
    }
}
