// WriteBuilder -- turns a set or a multi-path update, as a client sent it, into tree writes: server values
// resolved against the current tree, data validated. Shared by REST, the wire protocol and onDisconnect.

import CanopyCore

/// Builds the writes of one client operation. Errors are 400-class (`DataError` or `RESTError`).
enum WriteBuilder {
    /// A set of `json` at `path`: the node to write and the JSON with server values resolved (for echoes).
    static func set(_ json: JSONValue, at path: Path, root: Node, now: Int64) throws(DataError)
        -> (node: Node, resolved: JSONValue)
    {
        let resolved = try ServerValues.resolve(json, at: path, in: root, now: now)
        return (try Node.from(json: resolved, at: path), resolved)
    }

    /// A multi-path update `{relPath: value, …}` at `path`: one write per member, the relative paths (for rules),
    /// and the members with server values resolved (for echoes). Overlapping paths are refused.
    static func update(_ data: JSONValue, at path: Path, root: Node, now: Int64) throws
        -> (writes: [(path: Path, node: Node)], relative: [Path], resolved: [JSONMember])
    {
        guard case .object(let members) = data else {
            throw RESTError(400, "Invalid data; couldn't parse JSON object. An update needs an object.")
        }
        var writes: [(path: Path, node: Node)] = []
        var relative: [Path] = []
        var resolved: [JSONMember] = []
        do {
            for member in members {
                let rel = try Path(parsing: member.key, allowPriorityLeaf: true)
                let absolute = path.appending(rel)
                let (node, value) = try set(member.value, at: absolute, root: root, now: now)
                writes.append((absolute, node))
                relative.append(rel)
                resolved.append(JSONMember(member.key, value))
            }
        } catch {
            throw RESTError(400, error.userMessage)
        }
        try checkNoOverlap(relative)
        return (writes, relative, resolved)
    }

    /// A multi-path update may not name a path and one of its descendants (`{"a": 1, "a/b": 2}`).
    static func checkNoOverlap(_ paths: [Path]) throws {
        let sorted = paths.sorted { $0.segments.lexicographicallyPrecedes($1.segments) }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.isAncestorOrSelf(of: b) {
            throw RESTError(400, "Invalid data; path \(a) is an ancestor of (or the same as) \(b) in one update.")
        }
    }
}
