// RulesPolicy -- the AccessPolicy backed by compiled security rules, and the tree adapter the rules engine reads.

import CanopyCore
import CanopyRules

/// Authorizes with Firebase security rules; the admin credential bypasses them, as in Firebase.
public struct RulesPolicy: AccessPolicy {
    public let rules: CompiledRules

    public init(rules: CompiledRules) { self.rules = rules }

    public func decide(_ request: AccessRequest) -> AccessDecision {
        if case .admin = request.operation { return adminEndpointDecision(request.identity) }
        if request.identity.isAdmin { return .allow("admin credential") }
        let auth = request.identity.rulesAuth
        let old = NodeRuleData(root: request.oldRoot)
        let decision: RuleDecision
        switch request.operation {
        case .read(let query):
            let query = query.map(RuleQuery.init(spec:))
            func canRead(_ root: some RuleDataTree) -> RuleDecision {
                rules.canRead(path: request.path.segments, root: root, auth: auth, now: request.now, query: query)
            }
            decision = request.coverage.map { canRead(CoveredRuleData(data: old, coverage: $0)) } ?? canRead(old)
        case .write:
            decision = rules.canWrite(
                path: request.path.segments, oldRoot: old, newRoot: NodeRuleData(root: request.newRoot ?? .empty),
                auth: auth, now: request.now)
        case .update(let childPaths):
            decision = rules.canUpdate(
                basePath: request.path.segments, childPaths: childPaths.map(\.segments), oldRoot: old,
                newRoot: NodeRuleData(root: request.newRoot ?? .empty), auth: auth, now: request.now)
        case .admin:
            preconditionFailure("decided above")
        }
        return AccessDecision(allowed: decision.allowed, reason: decision.reason)
    }

    public func indexes(at path: Path) -> [String]? { rules.indexOn(at: path.segments) }

    public func couldAllowWrite(at path: Path, reach: CompiledRules.WriteReach, as identity: Identity) -> Bool {
        identity.isAdmin || rules.couldGrantWrite(at: path.segments, reach: reach, auth: identity.rulesAuth)
    }
}

extension RuleQuery {
    /// The `query` variable of `.read` rules for a query spec.
    init(spec: QuerySpec) {
        self.init()
        switch spec.index {
        case .key: orderByKey = true
        case .priority: orderByPriority = true
        case .value: orderByValue = true
        case .child(let path): orderByChild = path.segments.joined(separator: "/")
        }
        if spec.index != .key { orderByKey = false }
        if let start = spec.start, let end = spec.end, start.value == end.value, start.isInclusive, end.isInclusive {
            equalTo = start.value
        } else {
            startAt = spec.start?.value
            endAt = spec.end?.value
        }
        switch spec.limit {
        case .first(let n)?: limitToFirst = n
        case .last(let n)?: limitToLast = n
        case nil: break
        }
    }
}

/// Lets the rules engine read the database tree.
struct NodeRuleData: RuleDataTree {
    let root: Node

    private func node(_ path: [String]) -> Node { root.node(at: Path(segments: path)) }

    func primitive(at path: [String]) -> JSONValue? { node(path).value }
    func exists(at path: [String]) -> Bool { !node(path).isEmpty }
    func hasChildren(at path: [String]) -> Bool { node(path).childCount > 0 }
    func childKeys(at path: [String]) -> [String] { node(path).children.map(\.key) }
    func priority(at path: [String]) -> JSONValue? { node(path).priority }
}
