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

/// The shared deterministic generator (CanopyCore).
typealias SeededGenerator = SplitMix64
