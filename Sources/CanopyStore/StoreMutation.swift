// StoreMutation, StoredEntry -- the rows a namespace store writes and reads back.
import CanopyCore

/// One change to a namespace's stored tree. Submitted in batches to `NamespaceStore.submit(_:completion:)`.
///
/// Mutations are applied literally and in order: the store does not infer deletions. To replace the
/// value at `p`, submit `deleteSubtree(p)` then the new rows (`replacingSubtree(at:with:)` builds that list).
/// Keeping the tree's shape valid is the caller's job: when a write turns a leaf ancestor into an
/// internal node, delete that leaf (`deleteSubtree` at its path); when a delete empties a parent that
/// had a priority row, delete the parent too.
public enum StoreMutation: Sendable {
    /// Remove the node at `path` and everything below it (the whole tree for the root, `[]`).
    case deleteSubtree(path: [String])
    /// Remove the one row at exactly `path` (a leaf, or an internal node's priority), not the rows below it.
    case deleteRow(path: [String])
    /// Store (or overwrite) the leaf at `path`. `value` must be `.string`, `.int`, `.double` (finite) or `.bool`.
    case putLeaf(path: [String], value: JSONValue, priority: JSONValue?)
    /// Store (or overwrite) the priority of the internal node at `path`.
    case putPriority(path: [String], priority: JSONValue)

    /// The path this mutation touches.
    public var path: [String] {
        switch self {
        case .deleteSubtree(let path), .deleteRow(let path), .putLeaf(let path, _, _), .putPriority(let path, _): path
        }
    }

    /// The mutations that replace the subtree at `path` with `value`.
    ///
    /// Starts with `deleteSubtree(path)`, then one `putLeaf` per primitive and one `putPriority` per internal
    /// node that has a `.priority` member. Objects use Firebase's export format: `{".value": v, ".priority": p}`
    /// is a leaf with a priority. `null` and empty objects produce no rows. Arrays store their elements
    /// under the keys "0", "1", ... Keys are not validated here (CanopyCore's path rules apply upstream).
    ///
    /// - Parameters:
    ///   - path: where the new value goes.
    ///   - value: the new value, in export format.
    /// - Returns: the mutations, deletion first.
    public static func replacingSubtree(at path: [String], with value: JSONValue) -> [StoreMutation] {
        var mutations: [StoreMutation] = [.deleteSubtree(path: path)]
        var prefix = path
        appendRows(of: value, at: &prefix, to: &mutations)
        return mutations
    }

    /// The mutations that replace the subtree at `path` with the tree `node`.
    ///
    /// Starts with `deleteSubtree(path)`, then one row per record of `node` (`Node.forEachRecord`): a `putLeaf`
    /// per leaf, a `putPriority` per internal node with a priority. An empty node only deletes.
    /// - Parameters:
    ///   - path: where `node` goes.
    ///   - node: the new subtree.
    /// - Returns: the mutations, deletion first.
    public static func replacingSubtree(at path: [String], with node: Node) -> [StoreMutation] {
        var mutations: [StoreMutation] = [.deleteSubtree(path: path)]
        node.forEachRecord(under: path) { record in
            mutations.append(StoreMutation(record))
        }
        return mutations
    }

    /// The mutation that stores one record of a tree.
    public init(_ record: NodeRecord) {
        switch record {
        case .leaf(let path, let value, let priority): self = .putLeaf(path: path, value: value, priority: priority)
        case .priority(let path, let priority): self = .putPriority(path: path, priority: priority)
        }
    }

    private static let valueKey = ".value"
    private static let priorityKey = ".priority"

    private static func appendRows(of value: JSONValue, at path: inout [String], to mutations: inout [StoreMutation]) {
        switch value {
        case .null:
            return
        case .bool, .int, .double, .string:
            mutations.append(.putLeaf(path: path, value: value, priority: nil))
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                path.append(String(index))
                appendRows(of: element, at: &path, to: &mutations)
                path.removeLast()
            }
        case .object(let members):
            let priority = members.first { $0.key == priorityKey }?.value
            let storedPriority: JSONValue? = if case .null = priority ?? .null { nil } else { priority }
            if let leaf = members.first(where: { $0.key == valueKey })?.value {
                switch leaf {
                case .bool, .int, .double, .string:
                    mutations.append(.putLeaf(path: path, value: leaf, priority: storedPriority))
                default:
                    appendRows(of: leaf, at: &path, to: &mutations)
                }
                return
            }
            let before = mutations.count
            for member in members where member.key != priorityKey {
                path.append(member.key)
                appendRows(of: member.value, at: &path, to: &mutations)
                path.removeLast()
            }
            // A priority only exists on a node that exists: an object with no stored children vanishes.
            if let storedPriority, mutations.count > before {
                mutations.append(.putPriority(path: path, priority: storedPriority))
            }
        }
    }
}

/// One stored row, as read back by `NamespaceStore.loadAll(_:)`.
public struct StoredEntry: Sendable {
    /// What the row describes.
    public enum Kind: Int64, Sendable {
        /// A leaf: `value` is the primitive, `priority` its optional priority.
        case leaf = 0
        /// The priority of an internal node: `priority` is set, `value` is `.null`.
        case priority = 1
    }

    /// The node's path from the root (`[]` is the root).
    public var path: [String]
    /// Whether this row is a leaf or an internal node's priority.
    public var kind: Kind
    /// The leaf value (`.null` for a priority row).
    public var value: JSONValue
    /// The node's priority, if any (always set for a priority row).
    public var priority: JSONValue?

    /// The entry as a tree record, for `NodeBuilder.add(_:)`.
    public var record: NodeRecord {
        switch kind {
        case .leaf: .leaf(path: path, value: value, priority: priority)
        case .priority: .priority(path: path, priority: priority ?? .null)
        }
    }

    /// Creates an entry.
    public init(path: [String], kind: Kind, value: JSONValue, priority: JSONValue?) {
        self.path = path
        self.kind = kind
        self.value = value
        self.priority = priority
    }
}
