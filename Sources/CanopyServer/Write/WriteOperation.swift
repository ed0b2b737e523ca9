// WriteOperation -- what one write asks for, as a front end received it, and what it answers.
//
// Every front end (REST, the wire protocol, onDisconnect, the admin endpoints, `canopy import`, the demo loader)
// translates its request into a `WriteOperation` and hands it to `Namespace.perform`; it translates the
// `WriteReceipt` or the `WriteError` back into its own protocol. Nothing else changes a namespace's tree.

import CanopyCore
import CanopyPublish

/// One atomic write.
public enum WriteOperation: Sendable {
    /// Replace the node at `path` with `data` (REST PUT, POST's new child, DELETE as `.null`; wire `p`; import).
    case set(path: Path, data: JSONValue)
    /// A multi-path update `{relative path: value, …}` below `path` (REST PATCH, wire `m`).
    case update(path: Path, data: JSONValue)
    /// An action of the publish engine, computed from the namespace's own tree when it is performed.
    case admin(AdminAction)

    /// The location the operation is about (for rules and logs).
    public var path: Path {
        switch self {
        case .set(let path, _), .update(let path, _): path
        case .admin: .root
        }
    }
}

/// The publish engine's writing actions (`POST /.canopy/<action>`).
public enum AdminAction: Sendable, Equatable {
    /// Publish all of `pendingContent`, or only the item `item`; with `requireComplete`, nothing when an item to
    /// publish is incomplete (Completeness; the console asks for it, scripts may).
    case publish(item: String?, requireComplete: Bool = false)
    /// Remove one published item everywhere.
    case unpublish(item: String)
    /// `pendingContent := content`.
    case revert
    /// Republish the history entry `historyID`.
    case rollback(historyID: String)

    /// The endpoint's name, as the answer's `action` member and logs show it.
    public var name: String {
        switch self {
        case .publish: "publish"
        case .unpublish: "unpublish"
        case .revert: "revert"
        case .rollback: "rollback"
        }
    }
}

/// A precondition on the tree as the write finds it; when it does not hold, nothing is written.
public enum WriteCondition: Sendable {
    /// The REST ETag of the node at `path` (`if-match`; `null_etag` for an absent node).
    case etag(String, at: Path)
    /// The wire-protocol hash of the node at `path` (a transaction's `h`; `""` for an absent node).
    case hash(String, at: Path)

    var path: Path {
        switch self {
        case .etag(_, let path), .hash(_, let path): path
        }
    }

    func holds(in root: Node) -> Bool {
        switch self {
        case .etag(let expected, let path): root.node(at: path).etag == expected
        case .hash(let expected, let path): root.node(at: path).hash == expected
        }
    }
}

/// What a durable write answers.
public struct WriteReceipt: @unchecked Sendable {
    /// The tree before the operation.
    public let before: Node
    /// What was built (held as it is: most writers read nothing of their receipt).
    // @unchecked: `BuiltWrite` holds tuples of `Path` and `Node` (both Sendable), which Swift cannot see through.
    private let built: BuiltWrite

    init(before: Node, built: BuiltWrite) {
        self.before = before
        self.built = built
    }

    /// The tree after the operation.
    public var after: Node { built.newRoot }
    /// Calls `body` with each location the operation wrote, in the order it wrote them.
    public func forEachPath(_ body: (Path) -> Void) {
        for write in built.writes { body(write.path) }
    }
    /// A set: the written value with server values resolved. An update: the object of its members, resolved.
    /// An admin action: null.
    public var resolved: JSONValue { built.resolved }
}

/// Why a write was refused or failed. Carries facts; each protocol maps it (`WriteError+HTTP`, `WireSession`).
public enum WriteError: Error, Sendable {
    /// The data, a path or the update's shape is invalid (nothing was written).
    case invalidData(String)
    /// The policy refused it; `reason` names the rule or the place it was denied (for logs, not for clients).
    case permissionDenied(reason: String)
    /// The condition did not hold; `current` is the node the condition is about, as it is now.
    case conditionFailed(current: Node, at: Path)
    /// The publish engine refused the action (an invalid item, an unknown item or history entry).
    case publish(PublishError)
    /// The batch could not be stored (a full disk, a file that cannot be created); nothing was changed.
    case storageFailed
    /// The tree kept changing while an admin action was computed off the loop; nothing was changed.
    case conflict
}

extension WriteError: CanopyError {
    public var code: String {
        switch self {
        case .invalidData: "invalid_data"
        case .permissionDenied: "permission_denied"
        case .conditionFailed: "condition_failed"
        case .publish(let error): error.code
        case .storageFailed: "storage_failed"
        case .conflict: "conflict"
        }
    }

    public var userMessage: String {
        switch self {
        case .invalidData(let message): message
        case .permissionDenied: "Permission denied"
        case .conditionFailed: "The data changed: the condition of this write does not hold."
        case .publish(let error): error.userMessage
        case .storageFailed: "The write could not be stored; nothing was changed."
        case .conflict: "The event kept changing while this was computed; nothing was changed. Try again."
        }
    }

    public var description: String { "WriteError(\(code)): \(userMessage)" }
}
