// Evaluator -- runs a checked expression against one operation (Rules.md#Evaluation).
//
// Any run-time failure (a method called on null, mixed types in `<`, a non-string key, ...)
// throws `EvaluationError`; the caller treats the whole rule as not granting. Errors are never
// masked: `(ERR) || true` fails, only operands that short-circuiting skips are not evaluated.
import CanopyCore

/// Why a rule failed at run time. The reason names types, never values.
struct EvaluationError: Error, Sendable {
    var location: SourceLocation
    var reason: String
    var message: String { "\(location): \(reason)" }
}

/// What every rule of one operation shares; built once per read or write, not once per rule.
final class Operation {
    let auth: JSONValue
    let oldRoot: any RuleDataTree
    /// The tree after the operation; nil for reads (where `newData` cannot appear).
    let newRoot: (any RuleDataTree)?
    let now: Int64
    let query: RuleQuery

    init(auth: JSONValue, oldRoot: any RuleDataTree, newRoot: (any RuleDataTree)?, now: Int64, query: RuleQuery) {
        self.auth = auth
        self.oldRoot = oldRoot
        self.newRoot = newRoot
        self.now = now
        self.query = query
    }
}

/// Everything one rule evaluation can see.
struct Evaluator {
    let operation: Operation
    /// The location of the rule being evaluated (`data` / `newData`).
    let path: [String]
    let captures: [String]

    init(operation: Operation, path: [String], captures: [String]) {
        self.operation = operation
        self.path = path
        self.captures = captures
    }

    init(
        auth: JSONValue, oldRoot: any RuleDataTree, newRoot: (any RuleDataTree)?, path: [String], captures: [String],
        now: Int64, query: RuleQuery
    ) {
        self.init(
            operation: Operation(auth: auth, oldRoot: oldRoot, newRoot: newRoot, now: now, query: query), path: path,
            captures: captures)
    }

    var auth: JSONValue { operation.auth }
    var oldRoot: any RuleDataTree { operation.oldRoot }
    var newRoot: (any RuleDataTree)? { operation.newRoot }
    var now: Int64 { operation.now }
    var query: RuleQuery { operation.query }

    /// Evaluates a rule: true only if it yields boolean `true` without error.
    func isGranted(_ expression: Expression) -> Result<Bool, EvaluationError> {
        do {
            let value = try evaluate(expression)
            guard case .bool(let b) = value else {
                return .failure(EvaluationError(location: SourceLocation(line: 1, column: 1), reason: "rule is not a boolean"))
            }
            return .success(b)
        } catch {
            return .failure(error)
        }
    }

    func evaluate(_ expression: Expression) throws(EvaluationError) -> RuleValue {
        switch expression {
        case .constant(let v): return v
        case .variable(let v): return variable(v)
        case .not(let operand):
            guard case .bool(let b) = try evaluate(operand) else {
                throw EvaluationError(location: SourceLocation(line: 1, column: 1), reason: "'!' needs a boolean")
            }
            return .bool(!b)
        case .negate(let operand, let at):
            guard case .number(let n) = try evaluate(operand) else {
                throw EvaluationError(location: at, reason: "'-' needs a number")
            }
            return .number(-n)
        case .and(let left, let right):
            guard try boolean(left) else { return .bool(false) }
            return .bool(try boolean(right))
        case .or(let left, let right):
            if try boolean(left) { return .bool(true) }
            return .bool(try boolean(right))
        case .conditional(let condition, let whenTrue, let whenFalse, let at):
            guard case .bool(let b) = try evaluate(condition) else {
                throw EvaluationError(location: at, reason: "condition of '?' is not a boolean")
            }
            return try evaluate(b ? whenTrue : whenFalse)
        case .binary(let op, let left, let right, let at):
            return try binary(op, try evaluate(left), try evaluate(right), at: at)
        case .property(let target, let name):
            return property(of: try evaluate(target), name: name)
        case .dynamicProperty(let target, let key, let at):
            let object = try evaluate(target)
            switch try evaluate(key) {
            case .string(let s): return property(of: object, name: s)
            case .number(let n): return property(of: object, name: RuleValue.format(n))
            case let other: throw EvaluationError(location: at, reason: "cannot index with \(other.typeName)")
            }
        case .call(let target, let method, let arguments, let at):
            let receiver = try evaluate(target)
            var values: [RuleValue] = []
            values.reserveCapacity(arguments.count)
            for argument in arguments { values.append(try evaluate(argument)) }
            return try call(method, on: receiver, values, at: at)
        case .matches(let target, let program, let at):
            guard case .string(let s) = try evaluate(target) else {
                throw EvaluationError(location: at, reason: "matches() needs a string receiver")
            }
            return .bool(program.matches(s))
        case .hasChildrenList(let target, let keys, let at):
            guard case .snapshot(let snapshot) = try evaluate(target) else {
                throw EvaluationError(location: at, reason: "hasChildren() called on null")
            }
            for key in keys {
                guard case .string(let k) = try evaluate(key) else {
                    throw EvaluationError(location: at, reason: "hasChildren() needs string keys")
                }
                if !tree(snapshot).exists(at: snapshot.path + RuleValue.split(k)) { return .bool(false) }
            }
            return .bool(true)
        }
    }

    private func boolean(_ e: Expression) throws(EvaluationError) -> Bool {
        guard case .bool(let b) = try evaluate(e) else {
            throw EvaluationError(location: SourceLocation(line: 1, column: 1), reason: "logical operand is not a boolean")
        }
        return b
    }

    private func variable(_ v: Variable) -> RuleValue {
        switch v {
        case .auth: RuleValue(json: auth)
        case .root: .snapshot(SnapshotRef(isNew: false, path: []))
        case .data: .snapshot(SnapshotRef(isNew: false, path: path))
        case .newData: .snapshot(SnapshotRef(isNew: true, path: path))
        case .now: .number(Double(now))
        case .query: .query
        case .capture(let i): i < captures.count ? .string(captures[i]) : .null
        }
    }

    private func tree(_ snapshot: SnapshotRef) -> any RuleDataTree {
        snapshot.isNew ? (newRoot ?? oldRoot) : oldRoot
    }

    private func property(of target: RuleValue, name: String) -> RuleValue {
        switch target {
        case .json(let json):
            switch json {
            case .object(let members):
                for member in members where RuleValue.sameBytes(member.key, name) {
                    return RuleValue(json: member.value)
                }
                return .null
            case .array(let items):
                guard let i = Int(name), i >= 0, i < items.count, String(i) == name else { return .null }
                return RuleValue(json: items[i])
            default: return .null
            }
        case .string(let s): return name == "length" ? .number(Double(s.utf16.count)) : .null
        case .query: return queryField(name)
        default: return .null
        }
    }

    private func queryField(_ name: String) -> RuleValue {
        switch name {
        case "orderByKey": .bool(query.orderByKey)
        case "orderByPriority": .bool(query.orderByPriority)
        case "orderByValue": .bool(query.orderByValue)
        case "orderByChild": query.orderByChild.map { .string($0) } ?? .null
        case "startAt": query.startAt.map(RuleValue.init(json:)) ?? .null
        case "endAt": query.endAt.map(RuleValue.init(json:)) ?? .null
        case "equalTo": query.equalTo.map(RuleValue.init(json:)) ?? .null
        case "limitToFirst": query.limitToFirst.map { .number(Double($0)) } ?? .null
        case "limitToLast": query.limitToLast.map { .number(Double($0)) } ?? .null
        default: .null
        }
    }
}
