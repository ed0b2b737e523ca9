// EventStreams -- listen groups and REST streaming (Server-Sent Events) framing.
//
// SSE wire format (Protocol.md#Streaming): `event: <name>\ndata: <json>\n\n`, LF-only. The first event is a
// `put` at "/" with the whole value; later changes at or below the location are `put`s with the path relative to
// it, or, for an update (PATCH, `update()`) at or below it, one `patch` whose data holds the updated children
// relative to its path, as Firebase sends them; a change above it is a `put` at "/" with the location's new value.
// `keep-alive` (data `null`) every 30 s; `cancel` (a JSON string) when the rules stop granting the read;
// `auth_revoked` (bare text) when the token expires.

import CanopyCore
import CanopyNet

/// One change pushed to a listen group's listeners.
enum ListenUpdate {
    /// `value` is now at `path` (wire `d`, SSE `put`).
    case set(path: Path, value: Node)
    /// An update at `path`, at or below the listened location: the new value of each updated child, by path
    /// relative to `path` (wire `m`; a removed child is null), and the new node at `path` (SSE `patch` names
    /// immediate children: `{"a/b": 1}` streams as `{"a": {…}}`, read from `node`).
    case merge(path: Path, children: [(path: Path, value: Node)], node: Node)
}

/// Listeners sharing one (namespace, location, query): each change is computed and serialized once for all of
/// them, per transport.
final class ListenGroup {
    let namespace: Namespace
    let path: Path
    /// nil for a default listen (the whole subtree); a filtering query otherwise.
    let query: QuerySpec?
    let key: String
    var sse = SlotList<EventStream>()
    var wire = SlotList<WireListen>()
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

    /// The updates this group's listeners must receive for `operation` (applied to `before`), restricted to
    /// `changedPaths` (those of its paths that overlap this group), in order; empty when nothing they see changed.
    /// For an update (`operation.mergeBase`), a default listen at or above its location gets one merge of the
    /// updated children that changed, like Firebase's `m`; below it (where only some of the children matter) and
    /// for every other write, absolute-path overwrites — except that consecutive changed paths with one parent at
    /// or below the location (a publish's changed items of one location) are told as one merge at that parent,
    /// and a single one as an overwrite at its own path (Architecture.md#Publishing-item-by-item).
    func updates(
        of operation: CommittedOperation, before: Node, changedPaths: [Path], locations: inout Locations
    ) -> [ListenUpdate] {
        let (old, new) = locations.nodes(at: path, before: before, after: operation.root)
        if old === new { return [] }
        if let query {
            let newWindow = query.window(of: new)
            return query.window(of: old) == newWindow ? [] : [.set(path: path, value: newWindow)]
        }
        if let base = operation.mergeBase, path.isAncestorOrSelf(of: base),
            !changedPaths.contains(where: \.isPriorityPath)
        {
            var children: [(path: Path, value: Node)] = []
            for changed in changedPaths {
                let below = changed.segments[path.segments.count...]
                let value = new.node(at: below)
                if value === old.node(at: below) { continue }
                children.append((Path(segments: Array(changed.segments[base.segments.count...])), value))
            }
            if children.isEmpty { return [] }
            return [.merge(path: base, children: children, node: new.node(at: base.segments[path.segments.count...]))]
        }
        var out: [ListenUpdate] = []
        // Consecutive changed children of one node at or below this location (a publish's items of one
        // location), told as one merge there: one message per location instead of one per item.
        var siblings: (parent: Path, children: [(path: Path, value: Node)])?
        func flushSiblings() {
            guard let run = siblings else { return }
            siblings = nil
            if run.children.count == 1 {
                out.append(.set(path: run.parent.appending(run.children[0].path), value: run.children[0].value))
            } else {
                let node = new.node(at: run.parent.segments[path.segments.count...])
                out.append(.merge(path: run.parent, children: run.children, node: node))
            }
        }
        var previous: Path?
        for changed in changedPaths where changed != previous {
            previous = changed
            if changed.isAncestorOrSelf(of: path) {
                // A write at or above the location: the whole location, once.
                return [.set(path: path, value: new)]
            }
            guard path.isAncestor(of: changed) else { continue }
            let target = changed.isPriorityPath ? (changed.parent ?? changed) : changed
            // Walk down from this location's old and new nodes, not from the roots again.
            let below = target.segments[path.segments.count...]
            let value = new.node(at: below)
            if value === old.node(at: below) { continue }
            if !changed.isPriorityPath, let parent = target.parent, let key = target.lastKey {
                let child = (path: Path(segments: [key]), value: value)
                if siblings?.parent == parent {
                    siblings!.children.append(child)
                } else {
                    flushSiblings()
                    siblings = (parent, [child])
                }
                continue
            }
            flushSiblings()
            out.append(.set(path: target, value: value))
        }
        flushSiblings()
        return out
    }

    /// The nodes at a location before and after an operation, found from the parent of its parent that the last
    /// location found shares (if both trees are the same): a batch's groups come in tree order, so consecutive ones
    /// are mostly siblings (1,000 attendees' `content`, each under `users/<id>`), and each would otherwise search the
    /// 10,000 children of `users` from the roots again.
    struct Locations {
        private var roots: (before: Node, after: Node)?
        private var base: ArraySlice<String> = []
        private var baseNodes = (before: Node.empty, after: Node.empty)

        /// `before.node(at: path)` and `after.node(at: path)`.
        mutating func nodes(at path: Path, before: Node, after: Node) -> (old: Node, new: Node) {
            let segments = path.segments
            let cut = max(0, segments.count - 2)
            let known =
                roots.map { $0.before === before && $0.after === after } == true && base.count == cut
                && zip(base, segments[..<cut]).allSatisfy { sameKey($0, $1) }
            if !known {
                roots = (before, after)
                base = segments[..<cut]
                baseNodes = (before.node(at: base), after.node(at: base))
            }
            let rest = segments[cut...]
            return (baseNodes.before.node(at: rest), baseNodes.after.node(at: rest))
        }
    }

    /// SSE bytes for a list of updates (paths relative to the location, plain JSON).
    func sseBytes(_ updates: [ListenUpdate]) -> [UInt8] {
        var out: [UInt8] = []
        for update in updates {
            switch update {
            case .set(let at, let value):
                let relative = at.relative(to: path) ?? .root
                out += EventStream.format("put", ["path": .string(relative.description), "data": value.json()])
            case .merge(let at, let children, let node):
                let relative = at.relative(to: path) ?? .root
                // Each immediate child once, whole: updated paths may share one (`a/b` and `a/c`).
                var seen = Set<String>()
                let keys = children.compactMap { child in
                    seen.insert(child.path.segments[0]).inserted ? child.path.segments[0] : nil
                }
                let data = JSONValue.object(keys.map { JSONMember($0, node.child($0).json()) })
                out += EventStream.format("patch", ["path": .string(relative.description), "data": data])
            }
        }
        return out
    }
}

/// One SSE client. Loop-confined.
final class EventStream: SlotListMember {
    let stream: HTTPStream
    let identity: Identity
    var keepAlive: TimerHandle?
    var expiry: TimerHandle?
    weak var group: ListenGroup?
    /// Its index in `group.sse`.
    var slot = 0

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
