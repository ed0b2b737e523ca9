// Completeness -- what a pending item still lacks before it can be published, by type.
//
//   text, html          `text` (a non-empty string)
//   web, video          `url`
//   survey              `title`
//   <type>CSV           at least one row ("target"), and each row what its type needs ("rawData/3/url")
// Other types need nothing. Per the seed's semantics an item with `checkAll` or three empty visibility lists is for
// everyone, so a non-CSV item always has a target. The publish endpoint refuses incomplete items
// (`PublishError.incomplete`); `status` lists what each one misses.

import CanopyCore

/// One incomplete item: its key, title and what it misses.
public struct IncompleteItem: Sendable, Hashable {
    /// The item key.
    public let key: String
    /// The item's title, when it has one.
    public let title: String?
    /// The fields it misses (`url`, `text`, `title`, `target`, `rawData/0/url`).
    public let missing: [String]

    /// `{"key", "title"?, "missing"}`.
    public var json: JSONValue {
        var members = [JSONMember("key", .string(key))]
        if let title { members.append(JSONMember("title", .string(title))) }
        members.append(JSONMember("missing", .array(missing.map { .string($0) })))
        return .object(members)
    }
}

extension PublishEngine {
    /// What item `node` misses to be published (empty when it is complete).
    public static func missingFields(of node: Node) -> [String] {
        guard node.hasChildren else { return [] }
        let type = node.child("type").value?.stringValue ?? ""
        if type.hasSuffix("CSV") {
            let rows = node.child("rawData")
            guard rows.hasChildren else { return ["target"] }
            let rowType = String(type.dropLast(3))
            var missing: [String] = []
            for (index, row) in rows.children {
                let own = row.child("type").value?.stringValue ?? rowType
                for field in required(for: own) where !hasText(row.child(field)) {
                    missing.append("rawData/\(index)/\(field)")
                }
            }
            return missing
        }
        return required(for: type).filter { !hasText(node.child($0)) }
    }

    /// The incomplete items among `keys` of `pendingContent` (all of them when nil), in key order.
    public static func incompleteItems(root: Node, keys: [String]? = nil) -> [IncompleteItem] {
        let pending = root.node(at: PublishLayout.pendingContent)
        var out: [IncompleteItem] = []
        for (key, node) in pending.children where keys.map({ $0.contains(key) }) ?? true {
            let missing = missingFields(of: node)
            if missing.isEmpty { continue }
            out.append(IncompleteItem(key: key, title: node.child("title").value?.stringValue, missing: missing))
        }
        return out
    }

    static func required(for type: String) -> [String] {
        switch type {
        case "text", "html": ["text"]
        case "web", "video": ["url"]
        case "survey": ["title"]
        default: []
        }
    }

    static func hasText(_ node: Node) -> Bool {
        guard case .string(let s)? = node.value else { return false }
        return !s.trimmingSpaces.isEmpty
    }
}
