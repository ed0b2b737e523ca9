// EventStreams -- REST streaming (Server-Sent Events): `GET` with `Accept: text/event-stream`.
//
// Wire format (firebase-protocol.md §2.9): `event: <name>\ndata: <json>\n\n`, LF-only. The first event is a
// `put` at "/" with the whole value; later changes at or below the location are `put`s with the path relative to
// it; a change above it is a `put` at "/" with the location's new value. `keep-alive` (data `null`) every 30 s;
// `cancel` (a JSON string) when the rules stop granting the read; `auth_revoked` (bare text) when the token expires.

import CanopyCore
import CanopyNet

/// Listeners sharing one (namespace, location, query): each event is serialized once for all of them.
final class StreamGroup {
    let namespace: Namespace
    let path: Path
    let query: QuerySpec?
    var streams: [EventStream] = []

    init(namespace: Namespace, path: Path, query: QuerySpec?) {
        self.namespace = namespace
        self.path = path
        self.query = query
    }

    /// The SSE bytes for one committed batch, or nil when nothing this group sees changed.
    func events(before: Node, after: Node, changedPaths: [Path]) -> [UInt8]? {
        let old = before.node(at: path)
        let new = after.node(at: path)
        if old === new { return nil }
        if let query, !query.loadsAllData {
            let oldWindow = query.window(of: old)
            let newWindow = query.window(of: new)
            if oldWindow == newWindow { return nil }
            return EventStream.format("put", ["path": "/", "data": newWindow.json()])
        }
        var out: [UInt8] = []
        var sentRoot = false
        var previous: Path?
        for changed in changedPaths where changed != previous {
            previous = changed
            if let relative = changed.relative(to: path) {
                let target = relative.lastKey == ".priority" ? (changed.parent ?? changed) : changed
                let value = after.node(at: target)
                if value === before.node(at: target) { continue }
                let rel = target.relative(to: path) ?? .root
                out += EventStream.format("put", ["path": .string(rel.description), "data": value.json()])
            } else if changed.isAncestorOrSelf(of: path), !sentRoot {
                sentRoot = true
                out += EventStream.format("put", ["path": "/", "data": new.json()])
            }
        }
        return out.isEmpty ? nil : out
    }
}

/// One SSE client. Loop-confined.
final class EventStream {
    let stream: HTTPStream
    let identity: Identity
    var keepAlive: TimerHandle?
    var expiry: TimerHandle?
    weak var group: StreamGroup?

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
