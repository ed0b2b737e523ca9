// EventStreams -- listen groups and REST streaming (Server-Sent Events) framing.
//
// SSE wire format (firebase-protocol.md §2.9): `event: <name>\ndata: <json>\n\n`, LF-only. The first event is a
// `put` at "/" with the whole value; later changes at or below the location are `put`s with the path relative to
// it; a change above it is a `put` at "/" with the location's new value. `keep-alive` (data `null`) every 30 s;
// `cancel` (a JSON string) when the rules stop granting the read; `auth_revoked` (bare text) when the token expires.

import CanopyCore
import CanopyNet

/// Listeners sharing one (namespace, location, query): each change is computed and serialized once for all of
/// them, per transport.
final class ListenGroup {
    let namespace: Namespace
    let path: Path
    /// nil for a default listen (the whole subtree); a filtering query otherwise.
    let query: QuerySpec?
    let key: String
    var sse: [EventStream] = []
    var wire: [WireListen] = []
    var isEmpty: Bool { sse.isEmpty && wire.isEmpty }

    init(namespace: Namespace, path: Path, query: QuerySpec?, key: String) {
        self.namespace = namespace
        self.path = path
        self.query = query
        self.key = key
    }

    /// The value a new listener starts with.
    func currentValue(in root: Node) -> Node {
        let node = root.node(at: path)
        return query.map { $0.window(of: node) } ?? node
    }

    /// The updates this group's listeners must receive for one committed batch, as (absolute path, new value)
    /// overwrites in commit order; empty when nothing they see changed.
    func updates(before: Node, after: Node, changedPaths: [Path]) -> [(path: Path, value: Node)] {
        let old = before.node(at: path)
        let new = after.node(at: path)
        if old === new { return [] }
        if let query {
            let newWindow = query.window(of: new)
            return query.window(of: old) == newWindow ? [] : [(path, newWindow)]
        }
        var out: [(path: Path, value: Node)] = []
        var previous: Path?
        for changed in changedPaths where changed != previous {
            previous = changed
            if changed.isAncestorOrSelf(of: path) {
                // A write at or above the location: the whole location, once.
                return [(path, new)]
            }
            guard path.isAncestor(of: changed) else { continue }
            let target = changed.isPriorityPath ? (changed.parent ?? changed) : changed
            // Walk down from this location's old and new nodes, not from the roots again.
            let below = target.segments[path.segments.count...]
            let value = new.node(at: below)
            if value === old.node(at: below) { continue }
            out.append((target, value))
        }
        return out
    }

    /// SSE bytes for a list of updates (paths relative to the location, plain JSON).
    func sseBytes(_ updates: [(path: Path, value: Node)]) -> [UInt8] {
        var out: [UInt8] = []
        for update in updates {
            let relative = update.path.relative(to: path) ?? .root
            out += EventStream.format("put", ["path": .string(relative.description), "data": update.value.json()])
        }
        return out
    }
}

/// One SSE client. Loop-confined.
final class EventStream {
    let stream: HTTPStream
    let identity: Identity
    var keepAlive: TimerHandle?
    var expiry: TimerHandle?
    weak var group: ListenGroup?

    init(stream: HTTPStream, identity: Identity) {
        self.stream = stream
        self.identity = identity
    }

    static func format(_ event: String, _ data: JSONValue) -> [UInt8] {
        var out = Array("event: \(event)\ndata: ".utf8)
        data.write(into: &out)
        out += Array("\n\n".utf8)
        return out
    }

    static func formatRaw(_ event: String, _ text: String) -> [UInt8] {
        Array("event: \(event)\ndata: \(text)\n\n".utf8)
    }
}
