// WriteBuilder -- turns a write operation into tree writes against the current tree: server values resolved,
// data validated, publish actions computed. Pure: it commits nothing and decides nothing.

import CanopyCore
import CanopyPublish

/// The tree writes of one operation, and what the policy must judge. Immutable, and a class: the pipeline, the
/// authorized write and the receipt share one instance instead of copying it (a write's path is the hot path).
final class BuiltWrite {
    /// Disjoint locations and their new nodes, in order.
    let writes: [(path: Path, node: Node)]
    /// The tree with every write applied.
    let newRoot: Node
    /// What the policy sees: a set, an update with its child paths, or an admin action.
    let access: AccessOperation
    /// The location the policy judges (the set's path, the update's base, the root for admin actions).
    let path: Path
    /// For an update, its base: listeners at or above it are told with one merge event.
    let mergeBase: Path?
    /// See `WriteReceipt.resolved`.
    let resolved: JSONValue
    /// The store rows of `writes`, being made against the tree they were built on (admin actions built off the
    /// loop); nil when the writer makes them all.
    let early: EarlyPublishRows?

    init(
        writes: [(path: Path, node: Node)], newRoot: Node, access: AccessOperation, path: Path, mergeBase: Path?,
        resolved: JSONValue, early: EarlyPublishRows? = nil
    ) {
        self.writes = writes
        self.newRoot = newRoot
        self.access = access
        self.path = path
        self.mergeBase = mergeBase
        self.resolved = resolved
        self.early = early
    }
}

/// Builds the writes of one client operation.
enum WriteBuilder {
    /// The writes of `operation` against `root`; `publisher` names who publishes (publish history); `items`, the
    /// namespace's parsed items of its last publish (see `ParsedItems`).
    /// - Parameter makesRowsEarly: for an admin action, start making its store rows on another core as soon as its
    ///   writes are known, while the new tree is made (`EarlyPublishRows`).
    static func build(
        _ operation: WriteOperation, root: Node, now: Int64, publisher: String?, items: ParsedItems? = nil,
        makesRowsEarly: Bool = false
    ) throws(WriteError) -> BuiltWrite {
        switch operation {
        case .set(let path, let data):
            let (node, resolved) = try set(data, at: path, root: root, now: now)
            return BuiltWrite(
                writes: [(path, node)], newRoot: root.setting(node, at: path), access: .write, path: path,
                mergeBase: nil, resolved: resolved)
        case .update(let path, let data):
            let (writes, relative, resolved) = try update(data, at: path, root: root, now: now)
            return BuiltWrite(
                writes: writes, newRoot: Namespace.applying(writes, to: root),
                access: .update(childPaths: relative), path: path, mergeBase: path, resolved: .object(resolved))
        case .admin(let action):
            let writes: [(path: Path, node: Node)]
            do throws(PublishError) {
                switch action {
                case .publish(let item, let requireComplete):
                    if let item {
                        writes = try PublishEngine.publishItemWrites(
                            root: root, key: item, now: now, publisher: publisher, cache: items)
                    } else {
                        writes = try PublishEngine.publishWrites(
                            root: root, now: now, publisher: publisher, cache: items)
                    }
                    // Asked to, only complete items are published (Completeness): nothing is written otherwise.
                    // Checked after the items parsed, so an invalid item is reported as such first.
                    if requireComplete {
                        let incomplete = PublishEngine.incompleteItems(root: root, keys: item.map { [$0] })
                        guard incomplete.isEmpty else { throw PublishError(incomplete: incomplete) }
                    }
                case .unpublish(let item):
                    writes = try PublishEngine.unpublishItemWrites(
                        root: root, key: item, now: now, publisher: publisher, cache: items)
                case .revert:
                    writes = PublishEngine.revertWrites(root: root)
                case .rollback(let id):
                    writes = try PublishEngine.rollbackWrites(
                        root: root, historyID: id, now: now, publisher: publisher, cache: items)
                }
            } catch {
                throw .publish(error)
            }
            let early = makesRowsEarly && !writes.isEmpty ? EarlyPublishRows.start(writes: writes, before: root) : nil
            return BuiltWrite(
                writes: writes, newRoot: Namespace.applying(writes, to: root), access: .admin(action.name),
                path: .root, mergeBase: nil, resolved: .null, early: early)
        }
    }

    /// A set of `json` at `path`: the node to write and the JSON with server values resolved (for echoes).
    static func set(_ json: JSONValue, at path: Path, root: Node, now: Int64) throws(WriteError)
        -> (node: Node, resolved: JSONValue)
    {
        do {
            let resolved = try ServerValues.resolve(json, at: path, in: root, now: now)
            // Rewritten data keeps the stored instances: the caches keyed by node identity stay warm.
            return (try Node.from(json: resolved, at: path, reusing: root.node(at: path)), resolved)
        } catch {
            throw .invalidData(error.userMessage)
        }
    }

    /// A multi-path update `{relPath: value, …}` at `path`: one write per member, the relative paths (for rules),
    /// and the members with server values resolved (for echoes). Overlapping paths are refused.
    static func update(_ data: JSONValue, at path: Path, root: Node, now: Int64) throws(WriteError)
        -> (writes: [(path: Path, node: Node)], relative: [Path], resolved: [JSONMember])
    {
        guard case .object(let members) = data else {
            throw .invalidData("Invalid data; couldn't parse JSON object. An update needs an object.")
        }
        var writes: [(path: Path, node: Node)] = []
        var relative: [Path] = []
        var resolved: [JSONMember] = []
        for member in members {
            let rel: Path
            do {
                rel = try Path(parsing: member.key, allowPriorityLeaf: true)
            } catch {
                throw .invalidData(error.userMessage)
            }
            let absolute = path.appending(rel)
            let (node, value) = try set(member.value, at: absolute, root: root, now: now)
            writes.append((absolute, node))
            relative.append(rel)
            resolved.append(JSONMember(member.key, value))
        }
        try checkNoOverlap(relative)
        return (writes, relative, resolved)
    }

    /// A multi-path update may not name a path and one of its descendants (`{"a": 1, "a/b": 2}`).
    static func checkNoOverlap(_ paths: [Path]) throws(WriteError) {
        let sorted = paths.sorted { $0.segments.lexicographicallyPrecedes($1.segments) }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.isAncestorOrSelf(of: b) {
            throw .invalidData("Invalid data; path \(a) is an ancestor of (or the same as) \(b) in one update.")
        }
    }
}
