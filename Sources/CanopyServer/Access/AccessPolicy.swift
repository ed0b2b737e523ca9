// AccessPolicy -- the one authorization seam every read and write passes through.

import CanopyCore
import CanopyRules

/// What a request wants to do at a path.
public enum AccessOperation: Sendable {
    /// Read the node at the path, optionally through a query.
    case read(query: QuerySpec?)
    /// Replace the node at the path (PUT, POST's child, DELETE).
    case write
    /// Multi-path update: each child path, relative to the request path, is written.
    case update(childPaths: [Path])
    /// An endpoint of the publish engine (`publish`, `revert`, `status`, …): event administrators only.
    case admin(String)
}

/// Everything a policy may look at to decide.
public struct AccessRequest: Sendable {
    public var identity: Identity
    public var namespace: String
    public var path: Path
    public var operation: AccessOperation
    /// The namespace's tree before the operation.
    public var oldRoot: Node
    /// The tree as it would be after the write; `nil` for reads.
    public var newRoot: Node?
    /// Server time of the operation, in ms.
    public var now: Int64
    /// When `oldRoot` holds only part of the namespace (a read while it loads): the paths it holds in full. A
    /// rules policy notes there any look at data outside them (the decision is then not exact).
    var coverage: ReadCoverage? = nil
}

/// The outcome of an authorization check; `reason` names the rule that granted or the place it was denied.
public struct AccessDecision: Sendable {
    public var allowed: Bool
    public var reason: String
    public static func allow(_ reason: String) -> AccessDecision { AccessDecision(allowed: true, reason: reason) }
    public static func deny(_ reason: String) -> AccessDecision { AccessDecision(allowed: false, reason: reason) }
}

/// Decides whether an operation may proceed.
public protocol AccessPolicy: Sendable {
    func decide(_ request: AccessRequest) -> AccessDecision
    /// The `.indexOn` keys declared for the children of `path`; nil when the policy declares no indexes.
    func indexes(at path: Path) -> [String]?
    /// Whether `identity` could be allowed a write at `path` (with `reach`, below it), whatever the data and the
    /// value turn out to be. Asked before a request's body is read: false only when refusal is certain.
    func couldAllowWrite(at path: Path, reach: CompiledRules.WriteReach, as identity: Identity) -> Bool
}

extension AccessPolicy {
    public func indexes(at path: Path) -> [String]? { nil }
    public func couldAllowWrite(at path: Path, reach: CompiledRules.WriteReach, as identity: Identity) -> Bool {
        true
    }

    /// Decides one request: the only place an `AccessRequest` is assembled. Denials are logged (debug).
    public func authorize(
        _ operation: AccessOperation, at path: Path, as identity: Identity, in namespace: String, old: Node,
        new: Node?, now: Int64, coverage: ReadCoverage? = nil
    ) -> AccessDecision {
        let decision = decide(
            AccessRequest(
                identity: identity, namespace: namespace, path: path, operation: operation, oldRoot: old,
                newRoot: new, now: now, coverage: coverage))
        if !decision.allowed {
            Logger(label: "canopy.rules").debug(
                "rules.denied", ["ns": namespace, "path": path.description, "why": decision.reason])
        }
        return decision
    }

    /// Whether a query orders by a child or value that `.indexOn` does not declare at `path`.
    ///
    /// Firebase answers such REST queries with 400 ("Index not defined"); the emulator and the SDKs only warn
    /// (listens get `{"w": ["no_index"]}`). Canopy runs them anyway and reports them, like the emulator.
    public func isUnindexed(_ query: QuerySpec?, at path: Path) -> Bool {
        guard let query, let declared = indexes(at: path) else { return false }
        switch query.index {
        case .child(let child): return !declared.contains(child.segments.joined(separator: "/"))
        case .value: return !declared.contains(".value")
        case .key, .priority: return false
        }
    }
}

/// Secure by default: the admin credential may do everything, event administrators may use the admin
/// endpoints; everyone else is denied.
public struct AdminOnlyPolicy: AccessPolicy {
    public init() {}
    public func decide(_ request: AccessRequest) -> AccessDecision {
        if case .admin = request.operation { return adminEndpointDecision(request.identity) }
        return request.identity.isAdmin ? .allow("admin credential") : .deny("no rules grant access")
    }
    public func couldAllowWrite(at path: Path, reach: CompiledRules.WriteReach, as identity: Identity) -> Bool {
        identity.isAdmin
    }
}

/// The admin endpoints are for event administrators: the admin credential, or a token with `admin: true`.
/// Security rules do not apply to them (they guard data paths, as in Firebase).
func adminEndpointDecision(_ identity: Identity) -> AccessDecision {
    identity.isEventAdmin ? .allow("event administrator") : .deny("the admin endpoints need an event administrator")
}

/// Fail closed: denies everyone, the admin credential included (a namespace whose saved rules cannot be loaded).
public struct DenyAllPolicy: AccessPolicy {
    public init() {}
    public func decide(_ request: AccessRequest) -> AccessDecision { .deny("the rules could not be loaded") }
}
