// CompiledRules+Write -- sets and multi-path updates: the .write cascade and every applicable .validate.
//
// Rules.md#Reads-and-writes. For a set at P, with `oldRoot` the data before and `newRoot` the merged
// tree after (server values resolved, nulls pruned):
//   1. `.write` from the root down to P, `data` in the old tree and `newData` in the new; the first
//      true grants (rules below P never grant).
//   2. `.validate` on every node from the root to P whose new data exists, then on every rule node
//      matching a location inside P's new subtree. Deleted locations are skipped; `.validate`
//      does not cascade.
// An update is allowed only if every one of its parts is, all against the same new tree.
import CanopyCore

extension CompiledRules {
    /// Decides a set (PUT) of the data at `path`.
    /// - Parameters:
    ///   - oldRoot: the database before the write.
    ///   - newRoot: the whole database as it would be after the write (old data merged with the new value).
    ///   - auth: the `auth` variable exactly as rules see it.
    ///   - now: the operation's time in milliseconds (the value server timestamps resolved to).
    public func canWrite(
        path: [String], oldRoot: some RuleDataTree, newRoot: some RuleDataTree, auth: JSONValue, now: Int64
    ) -> RuleDecision {
        var node: RuleNode? = root
        var captures: [String] = []
        var grantedBy: String?
        var firstError: String?
        let operation = Operation(auth: auth, oldRoot: oldRoot, newRoot: newRoot, now: now, query: .plain)
        for depth in 0...path.count {
            guard let current = node else { break }
            let here = Array(path[0..<depth])
            let evaluator = Evaluator(operation: operation, path: here, captures: captures)
            if grantedBy == nil, let rule = current.write {
                switch CompiledRules.evaluate(rule, evaluator) {
                case .success(true): grantedBy = current.rulePath
                case .success(false): break
                case .failure(let error):
                    if firstError == nil { firstError = ".write at \(current.rulePath) failed: \(error.message)" }
                }
            }
            if let rule = current.validate, newRoot.exists(at: here) {
                if let failure = CompiledRules.validationFailure(rule, evaluator, current, here) {
                    return RuleDecision(allowed: false, reason: failure)
                }
            }
            guard depth < path.count else {
                if grantedBy != nil, current.hasValidateBelow, newRoot.exists(at: path) {
                    if let failure = validateSubtree(current, path: path, captures: captures, operation: operation)
                    {
                        return RuleDecision(allowed: false, reason: failure)
                    }
                }
                break
            }
            let step = current.child(for: path[depth])
            if step?.isWildcard == true { captures.append(path[depth]) }
            node = step?.node
        }
        guard let grantedBy else { return RuleDecision(allowed: false, reason: denial(".write", path, firstError)) }
        return RuleDecision(allowed: true, reason: "granted by .write at \(grantedBy)")
    }

    /// Decides a multi-path update (PATCH) at `basePath`: allowed only if every part is.
    /// - Parameters:
    ///   - childPaths: each patched location, relative to `basePath`.
    ///   - newRoot: the whole database after applying every part.
    public func canUpdate(
        basePath: [String], childPaths: [[String]], oldRoot: some RuleDataTree, newRoot: some RuleDataTree,
        auth: JSONValue, now: Int64
    ) -> RuleDecision {
        if childPaths.isEmpty { return RuleDecision(allowed: true, reason: "empty update") }
        var reasons: [String] = []
        for child in childPaths {
            let decision = canWrite(
                path: basePath + child, oldRoot: oldRoot, newRoot: newRoot, auth: auth, now: now)
            guard decision.allowed else { return decision }
            if !reasons.contains(decision.reason) { reasons.append(decision.reason) }
        }
        return RuleDecision(allowed: true, reason: reasons.joined(separator: "; "))
    }

    private static func validationFailure(_ rule: CompiledRule, _ evaluator: Evaluator, _ node: RuleNode, _ path: [String])
        -> String?
    {
        switch evaluate(rule, evaluator) {
        case .success(true): return nil
        case .success(false):
            return ".validate at \(node.rulePath) failed for /\(path.joined(separator: "/"))"
        case .failure(let error):
            return ".validate at \(node.rulePath) failed for /\(path.joined(separator: "/")): \(error.message)"
        }
    }

    /// Runs `.validate` on every rule node matching an existing location strictly below `path`.
    private func validateSubtree(_ node: RuleNode, path: [String], captures: [String], operation: Operation) -> String? {
        guard let newRoot = operation.newRoot else { return nil }
        func visit(_ child: RuleNode, _ key: String, isWildcard: Bool) -> String? {
            let childPath = path + [key]
            let childCaptures = isWildcard ? captures + [key] : captures
            if let rule = child.validate {
                let evaluator = Evaluator(operation: operation, path: childPath, captures: childCaptures)
                if let failure = CompiledRules.validationFailure(rule, evaluator, child, childPath) { return failure }
            }
            guard !child.children.isEmpty || child.wildcard != nil else { return nil }
            return validateSubtree(child, path: childPath, captures: childCaptures, operation: operation)
        }
        if node.wildcard == nil {
            for child in node.children.values where child.hasValidateBelow && newRoot.exists(at: path + [child.key]) {
                if let failure = visit(child, child.key, isWildcard: false) { return failure }
            }
            return nil
        }
        for key in newRoot.childKeys(at: path) {
            guard let step = node.child(for: key), step.node.hasValidateBelow else { continue }
            if let failure = visit(step.node, key, isWildcard: step.isWildcard) { return failure }
        }
        return nil
    }
}
