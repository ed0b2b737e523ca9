// Node+Ordering -- Firebase value ordering (Protocol.md#Value-ordering), used by indexes, queries and hashing.
//
// Index values compare as: empty (null) first; then leaves ranked by type, booleans (false < true) before numbers
// (numerically, integers and doubles mixed exactly) before strings (UTF-16 code-unit order); internal nodes last,
// all equal to one another. A leaf's own priority plays no part. Callers break ties with `compareKeys`.

/// Compares two index values in Firebase value order: negative, zero or positive.
///
/// Used for the value index (the children themselves), child indexes (the node at the child path) and the
/// priority index (the priorities as leaves, `.empty` for none).
public func compareIndexValues(_ a: Node, _ b: Node) -> Int {
    switch (a.leafValue, b.leafValue) {
    case (let x?, let y?):
        return comparePrimitives(x, y)
    case (.some, nil):
        return b.isEmpty ? 1 : -1
    case (nil, .some):
        return a.isEmpty ? -1 : 1
    case (nil, nil):
        if a.isEmpty == b.isEmpty { return 0 }
        return a.isEmpty ? -1 : 1
    }
}

/// Compares two JSON index values in Firebase value order (null, booleans, numbers, strings, objects/arrays).
public func compareIndexValues(_ a: JSONValue?, _ b: JSONValue?) -> Int {
    let ra = indexRank(a)
    let rb = indexRank(b)
    if ra != rb { return ra < rb ? -1 : 1 }
    guard let x = a, let y = b, ra >= 1, ra <= 3 else { return 0 }
    return comparePrimitives(x, y)
}

/// 0 null, 1 bool, 2 number, 3 string, 4 object/array.
private func indexRank(_ v: JSONValue?) -> Int {
    switch v {
    case nil, .null?: 0
    case .bool?: 1
    case .int?, .double?: 2
    case .string?: 3
    case .array?, .object?: 4
    }
}

/// Compares two primitives (bool, number, string) in Firebase order. Non-primitives rank after strings.
func comparePrimitives(_ a: JSONValue, _ b: JSONValue) -> Int {
    switch (a, b) {
    case (.bool(let x), .bool(let y)): return x == y ? 0 : (x ? 1 : -1)
    case (.string(let x), .string(let y)): return compareUTF16(x, y)
    case (.int(let x), .int(let y)): return x == y ? 0 : (x < y ? -1 : 1)
    case (.double(let x), .double(let y)): return x == y ? 0 : (x < y ? -1 : 1)
    case (.int(let x), .double(let y)): return compareIntToDouble(x, y)
    case (.double(let x), .int(let y)): return -compareIntToDouble(y, x)
    default:
        let ra = indexRank(a)
        let rb = indexRank(b)
        return ra == rb ? 0 : (ra < rb ? -1 : 1)
    }
}

/// Exact comparison of an integer with a finite double (no rounding of large integers).
func compareIntToDouble(_ i: Int64, _ d: Double) -> Int {
    if d >= 9_223_372_036_854_775_808.0 { return -1 }
    if d < -9_223_372_036_854_775_808.0 { return 1 }
    let whole = d.rounded(.down)
    let w = Int64(whole)
    if i != w { return i < w ? -1 : 1 }
    return d > whole ? -1 : 0
}
