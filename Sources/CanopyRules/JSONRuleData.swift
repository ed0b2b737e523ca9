// JSONRuleData -- a RuleDataTree over a JSON document, for tests and the `canopy rules` commands.
//
// Accepts plain JSON and the export format (`{".value": v, ".priority": p}` at any node; other
// `.`-keys such as `.priority` beside children are read as metadata, never as children). Nulls,
// empty objects and empty arrays do not exist, as in the database. Arrays are objects keyed
// "0", "1", ...
import CanopyCore

/// A `RuleDataTree` backed by an in-memory JSON value.
public struct JSONRuleData: RuleDataTree, Sendable {
    private final class Node: Sendable {
        let value: JSONValue?  // primitive leaf value, nil for internal nodes
        let priority: JSONValue?
        let children: [String: Node]
        init(value: JSONValue?, priority: JSONValue?, children: [String: Node]) {
            self.value = value
            self.priority = priority
            self.children = children
        }
    }

    private let root: Node?

    /// Builds the tree from a plain or export-format JSON value.
    public init(_ json: JSONValue) {
        root = JSONRuleData.build(json)
    }

    /// An empty database.
    public static let empty = JSONRuleData(.null)

    private static func build(_ json: JSONValue) -> Node? {
        switch json {
        case .null: return nil
        case .bool, .int, .double, .string: return Node(value: json, priority: nil, children: [:])
        case .array(let items):
            var children: [String: Node] = [:]
            for (i, item) in items.enumerated() {
                if let child = build(item) { children[String(i)] = child }
            }
            return children.isEmpty ? nil : Node(value: nil, priority: nil, children: children)
        case .object(let members):
            var children: [String: Node] = [:]
            var priority: JSONValue? = nil
            var leaf: JSONValue? = nil
            var hasLeaf = false
            for member in members {
                switch member.key {
                case ".priority":
                    switch member.value {
                    case .string, .int, .double: priority = member.value
                    default: break
                    }
                case ".value":
                    hasLeaf = true
                    leaf = member.value
                default:
                    if member.key.hasPrefix(".") { continue }
                    if let child = build(member.value) {
                        // Canonically equivalent keys would share a slot: keep the first, as the data can't hold both.
                        if children[member.key] == nil { children[member.key] = child }
                    }
                }
            }
            if hasLeaf, let leaf {
                guard let node = build(leaf) else { return nil }
                return Node(value: node.value, priority: priority, children: node.children)
            }
            return children.isEmpty ? nil : Node(value: nil, priority: priority, children: children)
        }
    }

    private func node(at path: [String]) -> Node? {
        var node = root
        for key in path {
            guard let current = node else { return nil }
            // Swift String lookup is canonical-equivalence based; keys must match byte for byte.
            guard let i = current.children.index(forKey: key), RuleValue.sameBytes(current.children[i].key, key) else {
                return nil
            }
            node = current.children[i].value
        }
        return node
    }

    public func primitive(at path: [String]) -> JSONValue? { node(at: path)?.value }
    public func exists(at path: [String]) -> Bool { node(at: path) != nil }
    public func hasChildren(at path: [String]) -> Bool { !(node(at: path)?.children.isEmpty ?? true) }
    public func childKeys(at path: [String]) -> [String] { node(at: path).map { Array($0.children.keys) } ?? [] }
    public func priority(at path: [String]) -> JSONValue? { node(at: path)?.priority }
}
