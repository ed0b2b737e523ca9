// LocalCache -- the server data the client holds: default listens' tree, query windows, what is known, what to save.
//
// A pure value. The server tree holds the values of default listens (and whatever stayed cached from earlier
// ones); each query listen has its own window. A listen is *known* once we hold its server data (from this run
// or from the cache file), possibly stale. Changed listens are *dirty* until the coordinator takes them and
// saves their rows (`CachedValue`) through the store writer.

import CanopyCore

/// The client's copy of server data and the bookkeeping of its cache file.
struct LocalCache: Sendable {
    private(set) var serverTree = Node.empty
    private(set) var queryViews: [ListenKey: Node] = [:]
    /// Listens whose server data we hold (from this run or the cache file), possibly stale.
    private(set) var known: Set<ListenKey> = []
    private var dirty: Set<ListenKey> = []

    /// Loads rows of the cache file; returns how many could not be read (skipped).
    @discardableResult
    mutating func load(_ rows: [CachedValue]) -> Int {
        var skipped = 0
        var defaults: [(Path, Node)] = []
        for row in rows {
            guard let path = try? Path(parsing: row.path), let json = try? JSONValue.parse(row.data),
                let node = try? Node.from(json: json, at: path)
            else {
                skipped += 1
                continue
            }
            if row.query.isEmpty {
                defaults.append((path, node))
                known.insert(ListenKey(path: path, query: nil))
            } else if let q = try? JSONValue.parse(row.query), let spec = try? QuerySpec.fromWire(q) {
                let key = ListenKey(path: path, query: spec)
                queryViews[key] = node
                known.insert(key)
            } else {
                skipped += 1
            }
        }
        // Shallow locations first, so a deeper (separately listened) location keeps its own saved value.
        for (path, node) in defaults.sorted(by: { $0.0.count < $1.0.count }) {
            serverTree = serverTree.setting(node, at: path)
        }
        return skipped
    }

    // MARK: - server data

    /// Sets untagged server data at `path`.
    mutating func setServer(_ node: Node, at path: Path) {
        serverTree = serverTree.setting(node, at: path)
    }

    /// Applies tagged server data (absolute paths) into `key`'s window.
    mutating func setWindow(_ key: ListenKey, _ updates: [(Path, Node)]) {
        var view = queryViews[key] ?? .empty
        for (path, node) in updates {
            guard let relative = path.relative(to: key.path) else { continue }
            view = view.setting(node, at: relative)
        }
        queryViews[key] = view
    }

    /// The server value for `key` (possibly stale or empty): the server tree for a default listen or a query
    /// `covered` by an active, known default listen above it (a superset of its window, kept current by that
    /// listen), else the query's own window.
    func serverView(_ key: ListenKey, covered: Bool) -> Node {
        if key.query == nil || covered { return serverTree.node(at: key.path) }
        return queryViews[key] ?? .empty
    }

    // MARK: - known and dirty

    /// Whether we hold server data for `key`, directly or through a default listen above it.
    func isKnown(_ key: ListenKey) -> Bool {
        if known.contains(key) { return true }
        return known.contains { $0.query == nil && $0.path.isAncestorOrSelf(of: key.path) }
    }

    mutating func markKnown(_ key: ListenKey) { known.insert(key) }

    /// Notes that `key`'s value changed; returns true when it is the first change since the last save (the
    /// caller schedules one).
    mutating func markDirty(_ key: ListenKey) -> Bool {
        let first = dirty.isEmpty
        dirty.insert(key)
        return first
    }

    /// Takes the changed listens to save. Rows of known locations below a changed default listen are taken
    /// too, so no older row below a newer one survives (loading applies deeper rows last).
    mutating func takeDirty() -> Set<ListenKey> {
        var keys = dirty
        dirty = []
        for key in keys where key.query == nil {
            for other in known where other.query == nil && key.path.isAncestor(of: other.path) {
                keys.insert(other)
            }
        }
        return keys
    }

    /// The cache row of `key` given its server value.
    static func row(_ key: ListenKey, view: Node) -> CachedValue {
        let query = key.query.map { $0.wireObject().serialized() } ?? ""
        let data = key.query.map { $0.window(of: view) } ?? view
        return CachedValue(
            path: key.path.description, query: query, data: data.json(export: true).serialized())
    }
}
