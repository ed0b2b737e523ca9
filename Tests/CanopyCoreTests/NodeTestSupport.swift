// NodeTestSupport -- small builders and a canonical renderer for JSON values in CanopyCore tree tests.

@testable import CanopyCore

/// Builds a JSON object from pairs, keeping their order.
func obj(_ pairs: (String, JSONValue)...) -> JSONValue {
    .object(pairs.map { JSONMember($0.0, $0.1) })
}

/// Builds a JSON array.
func arr(_ items: JSONValue...) -> JSONValue { .array(items) }

/// A compact, deterministic text form of a JSON value (member order kept), for exact comparisons in tests.
/// Integers print without a fraction and doubles with Swift's shortest form, so `.int(1)` and `.double(1)` differ.
func render(_ value: JSONValue?) -> String {
    guard let value else { return "nil" }
    switch value {
    case .null: return "null"
    case .bool(let b): return b ? "true" : "false"
    case .int(let i): return String(i)
    case .double(let d): return "\(d)d"
    case .string(let s): return "\"" + s + "\""
    case .array(let items): return "[" + items.map { render($0) }.joined(separator: ",") + "]"
    case .object(let members):
        return "{" + members.map { "\"\($0.key)\":" + render($0.value) }.joined(separator: ",") + "}"
    }
}

/// Builds a node from JSON, failing the test on error.
func node(_ json: JSONValue) throws -> Node {
    try Node.from(json: json)
}

/// A deterministic pseudo-random generator (SplitMix64) for property tests.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
