// AccessPolicy -- the one authorization seam every read and write passes through.

import CanopyCore

/// What a request wants to do at a path.
public enum AccessOperation: Sendable {
    /// Read the node at the path, optionally through a query.
    case read(query: QuerySpec?)
    /// Replace the node at the path (PUT, POST's child, DELETE).
    case write
    /// Multi-path update: each child path, relative to the request path, is written.
    case update(childPaths: [Path])
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
}

extension AccessPolicy {
    public func indexes(at path: Path) -> [String]? { nil }

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

/// Secure by default: the admin credential may do everything; everyone else is denied.
public struct AdminOnlyPolicy: AccessPolicy {
    public init() {}
    public func decide(_ request: AccessRequest) -> AccessDecision {
        request.identity.isAdmin ? .allow("admin credential") : .deny("no rules grant access")
    }
}

/// Fail closed: denies everyone, the admin credential included (a namespace whose saved rules cannot be loaded).
public struct DenyAllPolicy: AccessPolicy {
    public init() {}
    public func decide(_ request: AccessRequest) -> AccessDecision { .deny("the rules could not be loaded") }
}
