// CompiledRules+Reach -- could any `.write` rule grant an identity a write at a path, whatever the data?
//
// Rules.md#Writes-refused-before-their-body. Asked when only a request's head has arrived, so that a write no
// rule could allow is refused before its body is read. The answer "no" must be certain: it may depend only on
// what the head fixes — the identity (`auth`), the path (and the wildcards it captures) and `query` — never on
// `data`, `root`, `newData` or `now`, which can differ by the time the body has arrived. A rule is certainly
// non-granting when it is absent or `false`, or when its expression is: a part that reads none of those
// (evaluated now: false or an error), `a && b` with either part certainly non-granting, `a || b` with both,
// or `c ? a : b` with both branches (or the one a known `c` picks). Everything else might grant.
//
// Where the write can land (`WriteReach`): a set writes exactly its path, so only the `.write` rules from the
// root down to it can grant (rules below never grant); a push writes one new child; an update may write at any
// depth below its path.
import CanopyCore

extension CompiledRules {
    /// Where a write whose body is not known yet may land, relative to its path.
    public enum WriteReach: Sendable {
        /// The path itself (a set: PUT, DELETE).
        case path
        /// One child of the path, its key not known yet (a push: POST).
        case child
        /// Any location strictly below the path (a multi-path update: PATCH).
        case descendants
    }

    /// Whether some `.write` rule could grant `auth` a write at `path` (or, with `reach`, below it), whatever the
    /// data, the new data and the time turn out to be.
    /// - Returns: false only when no rule can grant such a write (see the file header); true when one might.
    public func couldGrantWrite(at path: [String], reach: WriteReach, auth: JSONValue) -> Bool {
        let operation = Operation(
            auth: auth, oldRoot: NoRuleData(), newRoot: NoRuleData(), now: 0, query: .plain)
        var node: RuleNode? = root
        var captures: [String] = []
        for depth in 0...path.count {
            guard let current = node else { return false }
            let evaluator = Evaluator(operation: operation, path: Array(path[0..<depth]), captures: captures)
            if !Self.certainlyDenies(current.write, evaluator, knownCaptures: captures.count) { return true }
            guard depth < path.count else { break }
            let step = current.child(for: path[depth])
            if step?.isWildcard == true { captures.append(path[depth]) }
            node = step?.node
        }
        guard let atPath = node else { return false }
        let evaluator = Evaluator(operation: operation, path: path, captures: captures)
        switch reach {
        case .path:
            return false
        case .child:
            return atPath.childNodes.contains {
                !Self.certainlyDenies($0.write, evaluator, knownCaptures: captures.count)
            }
        case .descendants:
            return atPath.childNodes.contains {
                Self.anyMightGrant(below: $0, evaluator, knownCaptures: captures.count)
            }
        }
    }

    /// Whether a `.write` at `node` or anywhere below it might grant. Captures below the path are unknown.
    private static func anyMightGrant(below node: RuleNode, _ evaluator: Evaluator, knownCaptures: Int) -> Bool {
        if !certainlyDenies(node.write, evaluator, knownCaptures: knownCaptures) { return true }
        return node.childNodes.contains { anyMightGrant(below: $0, evaluator, knownCaptures: knownCaptures) }
    }

    private static func certainlyDenies(_ rule: CompiledRule?, _ evaluator: Evaluator, knownCaptures: Int) -> Bool {
        switch rule {
        case nil: true
        case .constant(let granted): !granted
        case .expression(let expression): certainlyFalse(expression, evaluator, knownCaptures: knownCaptures)
        }
    }

    /// True when `expression` cannot yield `true`, whatever the unknowns are (an error never grants).
    private static func certainlyFalse(_ expression: Expression, _ evaluator: Evaluator, knownCaptures: Int) -> Bool {
        switch expression {
        case .and(let left, let right):
            return certainlyFalse(left, evaluator, knownCaptures: knownCaptures)
                || certainlyFalse(right, evaluator, knownCaptures: knownCaptures)
        case .or(let left, let right):
            return certainlyFalse(left, evaluator, knownCaptures: knownCaptures)
                && certainlyFalse(right, evaluator, knownCaptures: knownCaptures)
        case .conditional(let condition, let whenTrue, let whenFalse, _):
            if isFixed(condition, knownCaptures: knownCaptures) {
                guard case .bool(let b) = try? evaluator.evaluate(condition) else { return true }  // an error
                return certainlyFalse(b ? whenTrue : whenFalse, evaluator, knownCaptures: knownCaptures)
            }
            return certainlyFalse(whenTrue, evaluator, knownCaptures: knownCaptures)
                && certainlyFalse(whenFalse, evaluator, knownCaptures: knownCaptures)
        default:
            guard isFixed(expression, knownCaptures: knownCaptures) else { return false }
            if case .success(true) = evaluator.isGranted(expression) { return false }
            return true
        }
    }

    /// Whether `expression` reads only what a request's head fixes: `auth`, `query`, known captures, constants.
    private static func isFixed(_ expression: Expression, knownCaptures: Int) -> Bool {
        func fixed(_ e: Expression) -> Bool { isFixed(e, knownCaptures: knownCaptures) }
        switch expression {
        case .constant: return true
        case .variable(let variable):
            switch variable {
            case .auth, .query: return true
            case .capture(let index): return index < knownCaptures
            case .root, .data, .newData, .now: return false
            }
        case .not(let e), .negate(let e, _), .property(let e, _), .matches(let e, _, _): return fixed(e)
        case .binary(_, let l, let r, _), .and(let l, let r), .or(let l, let r), .dynamicProperty(let l, let r, _):
            return fixed(l) && fixed(r)
        case .conditional(let c, let t, let f, _): return fixed(c) && fixed(t) && fixed(f)
        case .call(let target, _, let arguments, _): return fixed(target) && arguments.allSatisfy(fixed)
        case .hasChildrenList(let target, let keys, _): return fixed(target) && keys.allSatisfy(fixed)
        }
    }
}

extension RuleNode {
    /// The named children and the wildcard child.
    fileprivate var childNodes: [RuleNode] { Array(children.values) + (wildcard.map { [$0] } ?? []) }
}

/// The trees of a decision taken before the data is known: fixed expressions never read them.
private struct NoRuleData: RuleDataTree {
    func primitive(at path: [String]) -> JSONValue? { nil }
    func exists(at path: [String]) -> Bool { false }
    func hasChildren(at path: [String]) -> Bool { false }
    func childKeys(at path: [String]) -> [String] { [] }
    func priority(at path: [String]) -> JSONValue? { nil }
}
