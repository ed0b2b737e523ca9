// ClusterNode+Disconnects -- the onDisconnect operations of sessions at replicas, kept in NATS so that the owner
// performs them when the replica's process dies (Cluster.md#Writes-at-a-replica).
//
// A session at a replica queues its onDisconnect operations as on any node, and also stores them in the R3 bucket
// `canopy_ondisconnect` under `<ns>.<incarnation>.<session>` before it acknowledges them. When the session ends,
// the replica performs them (forwarded to the owner) and removes the key. When the replica's process dies instead,
// its lease disappears; every node then lists the keys of that incarnation and performs those of the namespaces
// it owns, as a single node does when a connection drops. A node that claims a namespace performs the keys of
// incarnations that are no longer live (their owner may have died with them, or the namespace was not open).

import CanopyCore
import CanopyNATS
import CanopyNet
import Dispatch

/// One session's stored onDisconnect operations (each `DisconnectOperation.stored`).
struct StoredDisconnects: Sendable {
    var key: String
    var operations: [JSONValue]
}

extension ClusterNode {
    static let disconnectBucket = "canopy_ondisconnect"

    /// The key of a session's operations: namespace names, incarnations and session ids are KV tokens.
    func disconnectKey(namespace: String, session: String) -> String {
        namespace + "." + incarnation + "." + session
    }

    /// Stores a session's operations, or removes its key when there are none; in order, on `disconnectQueue`.
    /// `done` gets whether NATS stored it.
    func saveDisconnects(_ key: String, _ operations: [JSONValue], done: @escaping @Sendable (Bool) -> Void) {
        disconnectQueue.async { [self] in
            do {
                if operations.isEmpty {
                    try disconnects.purge(key)
                } else {
                    var value: [UInt8] = []
                    JSONValue.array(operations).write(into: &value)
                    _ = try disconnects.put(key, value)
                }
                done(true)
            } catch {
                logger.warning("cluster.ondisconnect_store_failed", ["key": key, "error": "\(error)"])
                done(false)
            }
        }
    }

    /// The process `incarnation` is gone: the operations its replicas' sessions left for namespaces this node
    /// owns go to `onOrphanedDisconnects`. Runs on the watch thread.
    func performDisconnects(of incarnation: String) throws {
        let held = heldNamespaces
        guard !held.isEmpty else { return }
        var byNamespace: [String: [StoredDisconnects]] = [:]
        for entry in try disconnects.entries("*." + incarnation + ".*") {
            guard let namespace = entry.key.split(separator: ".").first.map(String.init), held.contains(namespace),
                let stored = Self.decodeDisconnects(entry)
            else { continue }
            byNamespace[namespace, default: []].append(stored)
        }
        for (namespace, stored) in byNamespace {
            logger.notice(
                "cluster.ondisconnect_orphaned",
                ["ns": namespace, "incarnation": incarnation, "sessions": "\(stored.count)"])
            onOrphanedDisconnects?(namespace, stored)
        }
    }

    /// The operations stored for `namespace` by processes that are no longer live (read now, not from the last
    /// poll: a node that joined a moment ago is live). Blocks: call on `claimQueue` after a claim.
    func orphanedDisconnects(of namespace: String) throws -> [StoredDisconnects] {
        let entries = try disconnects.entries(namespace + ".>")
        guard !entries.isEmpty else { return [] }
        var alive: [String: Bool] = [:]
        var orphaned: [StoredDisconnects] = []
        for entry in entries {
            let parts = entry.key.split(separator: ".")
            guard parts.count == 3 else { continue }
            let owner = String(parts[1])
            if alive[owner] == nil { alive[owner] = try isLive(incarnation: owner) }
            if alive[owner] == false, let stored = Self.decodeDisconnects(entry) { orphaned.append(stored) }
        }
        return orphaned
    }

    /// Whether the lease of the node an incarnation names (`<node>-<suffix>`) is there and names it.
    private func isLive(incarnation: String) throws -> Bool {
        if incarnation == self.incarnation { return true }
        guard let dash = incarnation.lastIndex(of: "-") else { return false }
        return try leaseIncarnation(of: String(incarnation[..<dash])) == incarnation
    }

    private static func decodeDisconnects(_ entry: KeyValueEntry) -> StoredDisconnects? {
        guard let operations = (try? JSONValue.parse(entry.value))?.arrayValue else { return nil }
        return StoredDisconnects(key: entry.key, operations: operations)
    }
}

/// A replica's side of the bucket: saves and removes its sessions' operations; answers on the loop.
final class ReplicaDisconnectStore {
    let node: ClusterNode
    let namespace: String
    let loop: EventLoop

    init(node: ClusterNode, namespace: String, loop: EventLoop) {
        self.node = node
        self.namespace = namespace
        self.loop = loop
    }

    /// Stores `operations` as the session's (none: removes them); `done(stored)` runs on the loop.
    func save(session: String, _ operations: [DisconnectOperation], _ done: @escaping (Bool) -> Void) {
        let reply = LoopHeld(done, loop: loop)
        let loop = self.loop
        node.saveDisconnects(
            node.disconnectKey(namespace: namespace, session: session), operations.map(\.stored)
        ) { stored in loop.execute { reply.value(stored) } }
    }

    /// The session's operations were performed: its stored copy goes.
    func remove(session: String) {
        node.saveDisconnects(node.disconnectKey(namespace: namespace, session: session), []) { _ in }
    }
}

extension DisconnectOperation {
    /// The operation as a replica stores it: kind, path, data and the identity that queued it.
    var stored: JSONValue {
        let who: JSONValue
        switch identity {
        case .admin: who = "admin"
        case .anonymous: who = .null
        case .user(let auth, let expiresAt):
            who = .object([JSONMember("auth", auth), JSONMember("exp", expiresAt.map { .int($0) } ?? .null)])
        }
        return .object([
            JSONMember("k", .string(kind == .put ? "put" : "merge")), JSONMember("p", .string(path.description)),
            JSONMember("d", data), JSONMember("as", who),
        ])
    }

    /// An operation read back from the bucket; nil when it is not one (it is then skipped, and logged).
    init?(stored json: JSONValue) {
        guard let kind = json["k"]?.stringValue, kind == "put" || kind == "merge",
            let text = json["p"]?.stringValue,
            let path = try? Path(parsing: text, allowPriorityLeaf: kind == "put"), let data = json["d"],
            let who = json["as"]
        else { return nil }
        let identity: Identity
        if who == "admin" {
            identity = .admin
        } else if who == .null {
            identity = .anonymous
        } else if let auth = who["auth"] {
            identity = .user(auth: auth, expiresAt: who["exp"]?.int64Value)
        } else {
            return nil
        }
        self.init(kind: kind == "put" ? .put : .merge, path: path, data: data, identity: identity)
    }
}
