// JSONValue -- the JSON data type every Canopy module exchanges.
//
// Numbers keep their integer-ness: a JSON integer literal that fits in Int64 parses to `.int`,
// every other number to `.double`. Firebase clients compare `43` with `43` (Python `int`), so
// integers must be echoed without a fraction. Equality and ordering treat `.int(1)` and
// `.double(1.0)` as the same number.
//
// Objects keep their members in input order as an array, not a `Dictionary`: Swift `String`
// equality is canonical-equivalence based ("é" == "e\u{301}"), while Firebase keys are distinct
// by exact code units. Use `JSONValue.object(_:)` lookups only on small objects; the database tree
// (`Node`) is the indexed structure.

/// A JSON value.
public enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// Members in the order they were written or parsed. Keys are unique (the parser refuses duplicates).
    case object([JSONMember])
}

/// One member of a JSON object.
public struct JSONMember: Sendable {
    public var key: String
    public var value: JSONValue
    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}
