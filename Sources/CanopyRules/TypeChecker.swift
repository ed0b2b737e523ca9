// TypeChecker -- deploy-time checking of one rule expression (Rules.md#Type-checking).
//
// Every node gets a static type. `any` (values reached from `auth`) and `primitive` (the result
// of `val()`, query bounds) are "fuzzy": checks that depend on them are deferred to run time.
// Logical operators, `!` and the ternary's condition need an operand that is *statically*
// boolean, and so does the whole rule. Snapshots, regexes, `query` and array literals may only be
// used where the grammar of rules allows them.
import CanopyCore

/// Static types of rule expressions.
enum RuleType: String, Sendable {
    case boolean, number, string, null, regex, snapshot, any, primitive, query, array

    var isFuzzy: Bool { self == .any || self == .primitive }
    var isPrimitiveLike: Bool {
        switch self {
        case .boolean, .number, .string, .null, .primitive: true
        default: false
        }
    }
}

/// Which kind of rule is being checked; decides which variables are visible.
enum RuleKind: String, Sendable {
    case read = ".read", write = ".write", validate = ".validate"
}

struct TypeChecker {
    /// Wildcard names in scope, outermost first (their index is the capture index).
    let captures: [String]
    let kind: RuleKind

    /// Parses and checks `source`; the result is ready to evaluate.
    static func compile(_ source: String, captures: [String], kind: RuleKind) throws(ExpressionError) -> Expression {
        let syntax = try Parser.parse(source)
        let checker = TypeChecker(captures: captures, kind: kind)
        let (expression, type) = try checker.check(syntax)
        guard type == .boolean else {
            throw ExpressionError(
                location: SourceLocation(line: 1, column: 1), reason: "rule must be a boolean, not \(type.rawValue)")
        }
        return expression
    }

    private func fail(_ at: SourceLocation, _ reason: String) -> ExpressionError {
        ExpressionError(location: at, reason: reason)
    }

    func check(_ node: Syntax) throws(ExpressionError) -> (Expression, RuleType) {
        let at = node.location
        switch node.kind {
        case .boolean(let b): return (.constant(.bool(b)), .boolean)
        case .number(let n): return (.constant(.number(n)), .number)
        case .string(let s): return (.constant(.string(s)), .string)
        case .null: return (.constant(.null), .null)
        case .regex: throw fail(at, "a regular expression may only be the argument of matches()")
        case .array: throw fail(at, "an array may only be the argument of hasChildren()")
        case .identifier(let name): return try identifier(name, at: at)
        case .member(let target, let name): return try property(of: target, name: name, at: at)
        case .index(let target, let key):
            let (t, type) = try check(target)
            if type == .any {
                let (k, keyType) = try check(key)
                guard keyType.isPrimitiveLike || keyType == .any else {
                    throw fail(key.location, "index must be a string or number, not \(keyType.rawValue)")
                }
                return (.dynamicProperty(t, k, at), .any)
            }
            guard case .string(let name) = key.kind else {
                throw fail(key.location, "index into \(type.rawValue) must be a string literal")
            }
            return try property(of: target, name: name, at: at)
        case .call(let callee, let arguments): return try call(callee, arguments, at: at)
        case .not(let operand):
            let (e, type) = try check(operand)
            guard type == .boolean else { throw fail(at, "'!' needs a boolean operand, not \(type.rawValue)") }
            return (.not(e), .boolean)
        case .negate(let operand):
            let (e, type) = try check(operand)
            guard type == .number || type.isFuzzy else {
                throw fail(at, "'-' needs a number operand, not \(type.rawValue)")
            }
            if case .constant(.number(let n)) = e { return (.constant(.number(-n)), .number) }
            return (.negate(e, at), .number)
        case .binary(let op, let left, let right): return try binary(op, left, right, at: at)
        case .and(let left, let right), .or(let left, let right):
            let (l, lt) = try check(left)
            let (r, rt) = try check(right)
            let symbol = if case .and = node.kind { "&&" } else { "||" }
            guard lt == .boolean else { throw fail(left.location, "left operand of '\(symbol)' must be boolean") }
            guard rt == .boolean else { throw fail(right.location, "right operand of '\(symbol)' must be boolean") }
            if case .and = node.kind { return (.and(l, r), .boolean) }
            return (.or(l, r), .boolean)
        case .conditional(let condition, let whenTrue, let whenFalse):
            let (c, ct) = try check(condition)
            guard ct == .boolean else { throw fail(condition.location, "condition of '?' must be boolean") }
            let (a, at1) = try check(whenTrue)
            let (b, bt) = try check(whenFalse)
            let type: RuleType =
                at1 == bt ? at1 : (at1.isPrimitiveLike && bt.isPrimitiveLike ? .primitive : .any)
            if at1 == .regex || at1 == .array || bt == .regex || bt == .array {
                throw fail(at, "conditional branches must be values")
            }
            return (.conditional(c, a, b, at), type)
        }
    }

    private func identifier(_ name: String, at: SourceLocation) throws(ExpressionError) -> (Expression, RuleType) {
        switch name {
        case "auth": return (.variable(.auth), .any)
        case "root": return (.variable(.root), .snapshot)
        case "data": return (.variable(.data), .snapshot)
        case "now": return (.variable(.now), .number)
        case "newData":
            guard kind != .read else { throw fail(at, "newData is not available in .read rules") }
            return (.variable(.newData), .snapshot)
        case "query":
            guard kind == .read else { throw fail(at, "query is only available in .read rules") }
            return (.variable(.query), .query)
        default:
            if name.hasPrefix("$") {
                guard let index = captures.lastIndex(of: name) else {
                    throw fail(at, "undeclared wildcard variable '\(name)'")
                }
                return (.variable(.capture(index)), .string)
            }
            throw fail(at, "unknown variable '\(name)'")
        }
    }

    static let queryFields: [String: RuleType] = [
        "orderByKey": .boolean, "orderByPriority": .boolean, "orderByValue": .boolean,
        "orderByChild": .string, "startAt": .primitive, "endAt": .primitive, "equalTo": .primitive,
        "limitToFirst": .number, "limitToLast": .number,
    ]

    /// A non-call property access `target.name` (or `target['name']`).
    private func property(of target: Syntax, name: String, at: SourceLocation) throws(ExpressionError) -> (
        Expression, RuleType
    ) {
        let (t, type) = try check(target)
        switch type {
        case .any: return (.property(t, name), .any)
        case .query:
            guard let fieldType = TypeChecker.queryFields[name] else {
                throw fail(at, "query has no member '\(name)'")
            }
            return (.property(t, name), fieldType)
        case .string, .primitive:
            if name == "length" { return (.property(t, name), .number) }
            if Method(rawValue: name).map(TypeChecker.stringMethods.contains) == true {
                throw fail(at, "method '\(name)' must be called")
            }
            throw fail(at, "string has no property '\(name)'")
        case .snapshot:
            if Method(rawValue: name).map(TypeChecker.snapshotMethods.contains) == true {
                throw fail(at, "method '\(name)' must be called")
            }
            throw fail(at, "snapshot has no property '\(name)'")
        default:
            throw fail(at, "\(type.rawValue) has no property '\(name)'")
        }
    }

    static let snapshotMethods: Set<Method> = [
        .val, .child, .parent, .hasChild, .hasChildren, .exists, .getPriority, .isNumber, .isString, .isBoolean,
    ]
    static let stringMethods: Set<Method> = [
        .contains, .beginsWith, .endsWith, .replace, .toLowerCase, .toUpperCase, .matches,
    ]

    private func call(_ callee: Syntax, _ arguments: [Syntax], at: SourceLocation) throws(ExpressionError) -> (
        Expression, RuleType
    ) {
        let target: Syntax
        let name: String
        switch callee.kind {
        case .member(let t, let n):
            target = t
            name = n
        case .index(let t, let key):
            guard case .string(let n) = key.kind else {
                throw fail(key.location, "method name must be fixed when the rules are compiled")
            }
            target = t
            name = n
        default:
            throw fail(callee.location, "only methods of snapshots and strings can be called")
        }
        let (t, type) = try check(target)
        let method: Method
        switch type {
        case .snapshot:
            guard let m = Method(rawValue: name), TypeChecker.snapshotMethods.contains(m) else {
                throw fail(callee.location, "snapshot has no method '\(name)'")
            }
            method = m
        case .string, .primitive, .any:
            guard let m = Method(rawValue: name), TypeChecker.stringMethods.contains(m) else {
                throw fail(callee.location, "\(type == .any ? "value" : "string") has no method '\(name)'")
            }
            method = m
        default:
            throw fail(callee.location, "\(type.rawValue) has no method '\(name)'")
        }
        return try methodCall(t, method, arguments, at: at)
    }

    private func methodCall(_ target: Expression, _ method: Method, _ arguments: [Syntax], at: SourceLocation)
        throws(ExpressionError) -> (Expression, RuleType)
    {
        func expectCount(_ n: Int) throws(ExpressionError) {
            guard arguments.count == n else {
                throw fail(at, "\(method.rawValue)() takes \(n) argument\(n == 1 ? "" : "s"), got \(arguments.count)")
            }
        }
        func stringArgument(_ node: Syntax) throws(ExpressionError) -> Expression {
            let (e, type) = try check(node)
            guard type == .string || type.isFuzzy else {
                throw fail(node.location, "\(method.rawValue)() needs a string argument, not \(type.rawValue)")
            }
            return e
        }
        switch method {
        case .val, .parent, .exists, .getPriority, .isNumber, .isString, .isBoolean, .toLowerCase, .toUpperCase:
            try expectCount(0)
            let type: RuleType =
                switch method {
                case .val: .primitive
                case .parent: .snapshot
                case .getPriority: .any
                case .toLowerCase, .toUpperCase: .string
                default: .boolean
                }
            return (.call(target, method, [], at), type)
        case .child, .hasChild, .contains, .beginsWith, .endsWith:
            try expectCount(1)
            let argument = try stringArgument(arguments[0])
            return (.call(target, method, [argument], at), method == .child ? .snapshot : .boolean)
        case .replace:
            try expectCount(2)
            let a = try stringArgument(arguments[0])
            let b = try stringArgument(arguments[1])
            return (.call(target, method, [a, b], at), .string)
        case .matches:
            try expectCount(1)
            guard case .regex(let pattern, let flags) = arguments[0].kind else {
                throw fail(arguments[0].location, "matches() needs a regular expression literal")
            }
            let program: RegexProgram
            do {
                program = try RegexProgram.compile(pattern: pattern, flags: flags)
            } catch {
                throw fail(arguments[0].location, "invalid regular expression: \(error.reason)")
            }
            return (.matches(target, program, at), .boolean)
        case .hasChildren:
            if arguments.isEmpty { return (.call(target, method, [], at), .boolean) }
            try expectCount(1)
            guard case .array(let elements) = arguments[0].kind else {
                throw fail(arguments[0].location, "hasChildren() takes an array of strings")
            }
            guard !elements.isEmpty else { throw fail(arguments[0].location, "hasChildren() got an empty array") }
            var keys: [Expression] = []
            for element in elements {
                let (e, type) = try check(element)
                guard type == .string || type.isFuzzy else {
                    throw fail(element.location, "hasChildren() needs strings, not \(type.rawValue)")
                }
                keys.append(e)
            }
            return (.hasChildrenList(target, keys, at), .boolean)
        }
    }

    private func binary(_ op: BinaryOperator, _ left: Syntax, _ right: Syntax, at: SourceLocation)
        throws(ExpressionError) -> (Expression, RuleType)
    {
        let (l, lt) = try check(left)
        let (r, rt) = try check(right)
        func require(_ allowed: Set<RuleType>, _ what: String) throws(ExpressionError) {
            guard allowed.contains(lt) || lt.isFuzzy else {
                throw fail(left.location, "left operand of '\(op.rawValue)' must be \(what), not \(lt.rawValue)")
            }
            guard allowed.contains(rt) || rt.isFuzzy else {
                throw fail(right.location, "right operand of '\(op.rawValue)' must be \(what), not \(rt.rawValue)")
            }
        }
        let type: RuleType
        switch op {
        case .add:
            try require([.string, .number], "a string or number")
            type = lt == .string || rt == .string ? .string : (lt == .number && rt == .number ? .number : .primitive)
        case .subtract, .multiply, .divide, .remainder:
            try require([.number], "a number")
            type = .number
        case .equal, .notEqual:
            try require([.string, .number, .boolean, .null], "a string, number, boolean or null")
            type = .boolean
        case .less, .lessEqual, .greater, .greaterEqual:
            try require([.string, .number, .null], "a string or number")
            type = .boolean
        }
        return (.binary(op, l, r, at), type)
    }
}
