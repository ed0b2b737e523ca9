// DataSnapshot -- an immutable value at a location as one listener sees it (children ordered by its query).

import CanopyCore

/// The value at a location at one moment.
public struct DataSnapshot: Sendable {
    let location: Path
    let node: Node
    let spec: QuerySpec
    /// True while the value comes from the local cache (or stale data) and the server has not confirmed it on
    /// the current connection.
    public let fromCache: Bool

    init(path: Path, node: Node, spec: QuerySpec, fromCache: Bool) {
        location = path
        self.node = node
        self.spec = spec
        self.fromCache = fromCache
    }

    /// The last key of the location (nil at the root).
    public var key: String? { location.lastKey }
    /// The location, `/a/b`.
    public var path: String { location.description }
    /// The value as plain JSON (`.null` when absent; priorities dropped; array-like objects become arrays).
    public var value: JSONValue { node.json(export: false) }
    /// The value in export form (`.priority` and `.value` kept, never arrays).
    public var exportValue: JSONValue { node.json(export: true) }
    /// Whether a value exists here.
    public var exists: Bool { !node.isEmpty }
    /// The priority of this node, if any.
    public var priority: JSONValue? { node.priority }
    /// The number of direct children.
    public var childrenCount: Int { node.childCount }

    /// Whether the child at `path` (relative, may contain `/`) exists.
    public func hasChild(_ path: String) -> Bool { child(path).exists }

    /// The snapshot of a relative path below this one (empty when absent).
    public func child(_ path: String) -> DataSnapshot {
        let relative = Path(segments: Path.segments(splitting: path))
        return DataSnapshot(path: location.appending(relative), node: node.node(at: relative), spec: .default, fromCache: fromCache)
    }

    /// The direct children in the order of the listener's query (priority order by default).
    public var children: [DataSnapshot] {
        spec.orderedChildren(of: node).map {
            DataSnapshot(path: location.child($0.key), node: $0.node, spec: .default, fromCache: fromCache)
        }
    }
}
