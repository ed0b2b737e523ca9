// WriteTree -- the client's pending (unacknowledged) writes, layered in order over server data.
//
// The local view of a location is the server's value there with every pending write applied in the order the
// application made them: a set at or below the location replaces that part, a set above it replaces the whole
// location with the matching part of the written value, a merge applies entry by entry the same way. Acks and
// rejections remove a write; what remains is re-layered, so a rejected write rolls back by construction.

import CanopyCore

/// One local write the server has not yet acknowledged.
struct UserWrite: Sendable {
    /// What the write does to the tree, with server values resolved locally (estimates).
    enum Change: Sendable {
        /// Replace the node at `path`.
        case set(Node)
        /// Set each relative path below `path`, in order.
        case merge([(path: Path, node: Node)])
    }

    let id: Int64
    let path: Path
    let change: Change
    /// The value as the application gave it (placeholders unresolved): what is sent.
    let wire: JSONValue
    /// A transaction's optimistic value (not persisted, sent by the transaction with its hash).
    var isTransaction = false
    /// Whether the write was sent on some connection (persisted for writes with increments).
    var sent = false

    /// The wire action: `p` for a set, `m` for a merge.
    var action: String {
        if case .merge = change { return Wire.Action.merge }
        return Wire.Action.put
    }

    /// The absolute locations the write sets, in order.
    var targets: [(path: Path, node: Node)] {
        switch change {
        case .set(let node): return [(path, node)]
        case .merge(let entries): return entries.map { (path.appending($0.path), $0.node) }
        }
    }

    /// Whether resending could apply the write twice: a server increment is not idempotent.
    var containsIncrement: Bool { Self.containsIncrement(wire) }

    static func containsIncrement(_ json: JSONValue) -> Bool {
        switch json {
        case .object(let members):
            return members.contains { member in
                if sameKey(member.key, Key.serverValue), case .object = member.value { return true }
                return containsIncrement(member.value)
            }
        case .array(let items): return items.contains(where: containsIncrement)
        default: return false
        }
    }
}

/// The ordered pending writes.
struct WriteTree: Sendable {
    private(set) var writes: [UserWrite] = []

    /// The number of pending application writes (transactions excluded).
    var userWriteCount: Int { writes.count(where: { !$0.isTransaction }) }

    mutating func append(_ write: UserWrite) {
        precondition(writes.last.map { $0.id < write.id } ?? true, "write ids must increase")
        writes.append(write)
    }

    /// Removes and returns the write with `id`, if pending.
    @discardableResult
    mutating func remove(_ id: Int64) -> UserWrite? {
        guard let index = writes.firstIndex(where: { $0.id == id }) else { return nil }
        return writes.remove(at: index)
    }

    func write(_ id: Int64) -> UserWrite? { writes.first { $0.id == id } }

    mutating func markSent(_ id: Int64) {
        if let index = writes.firstIndex(where: { $0.id == id }) { writes[index].sent = true }
    }

    /// `base` (the server value at `location`) with every pending write layered on top.
    ///
    /// Writes below the location are gathered and applied in one `Node.merging` pass (each touched node is
    /// rebuilt once), so many pending writes under one big location cost O(size + writes), not O(size × writes).
    /// A write at or above the location replaces everything gathered before it.
    func overlay(_ base: Node, at location: Path) -> Node {
        var node = base
        var below: [(path: Path, node: Node)] = []
        for write in writes {
            for (target, value) in write.targets {
                if let relative = target.relative(to: location), !relative.isRoot {
                    below.append((relative, value))
                } else if let inside = location.relative(to: target) {
                    below.removeAll(keepingCapacity: true)
                    node = value.node(at: inside)
                }
            }
        }
        return below.isEmpty ? node : node.merging(below)
    }

    /// Whether some pending write touches `location`, a place above it or below it.
    func touches(_ location: Path) -> Bool {
        writes.contains { $0.path.isAncestorOrSelf(of: location) || location.isAncestorOrSelf(of: $0.path) }
    }

    /// Whether a pending set at or above `location` fully determines its value (no server data needed).
    func determines(_ location: Path) -> Bool {
        writes.contains { write in write.targets.contains { $0.path.isAncestorOrSelf(of: location) } }
    }
}
