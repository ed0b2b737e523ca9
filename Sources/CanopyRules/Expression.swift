// Expression -- the checked, resolved form of a rule expression that the evaluator runs.
//
// The type checker turns `Syntax` into `Expression`: identifiers become variable slots, `$vars`
// become capture indices, method names become `Method` cases and regex literals compiled
// programs. Nothing is looked up by name at evaluation time except JSON members of `auth`.
import CanopyCore

/// A snapshot method or string method, fixed at compile time.
enum Method: String, Sendable, CaseIterable {
    // RuleDataSnapshot
    case val, child, parent, hasChild, hasChildren, exists, getPriority, isNumber, isString, isBoolean
    // String
    case contains, beginsWith, endsWith, replace, toLowerCase, toUpperCase, matches
}

/// Variables visible to rules (Rules.md#Variables).
enum Variable: Sendable {
    case auth, root, data, newData, now, query
    /// The value captured by the wildcard at this index along the rule's path.
    case capture(Int)
}

/// A checked expression. Locations are kept for run-time error messages.
indirect enum Expression: Sendable {
    case constant(RuleValue)
    case variable(Variable)
    case not(Expression)
    case negate(Expression, SourceLocation)
    case binary(BinaryOperator, Expression, Expression, SourceLocation)
    case and(Expression, Expression)
    case or(Expression, Expression)
    case conditional(Expression, Expression, Expression, SourceLocation)
    /// `target.name` on `auth`-derived values, `query`, or a string's `length`.
    case property(Expression, String)
    /// `target[key]` with a computed key, on `auth`-derived values only.
    case dynamicProperty(Expression, Expression, SourceLocation)
    case call(Expression, Method, [Expression], SourceLocation)
    case matches(Expression, RegexProgram, SourceLocation)
    /// `hasChildren([k1, k2, ...])`.
    case hasChildrenList(Expression, [Expression], SourceLocation)
}

/// A snapshot reference: which tree (before or after the operation) and where.
struct SnapshotRef: Sendable {
    var isNew: Bool
    var path: [String]
}

/// A value during evaluation.
enum RuleValue: Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    /// An object or array reached from `auth`.
    case json(JSONValue)
    case snapshot(SnapshotRef)
    /// The `query` variable.
    case query
    /// What `val()` returns for a node with children: unequal to everything, useless otherwise.
    case opaque

    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .json: "object"
        case .snapshot: "snapshot"
        case .query: "query"
        case .opaque: "object"
        }
    }
}
