// PublishEngine+Status -- pending versus published, item by item, as JSON for `canopy status`.
//
// Output shape:
//   {"lastPublishedAt": ms|null, "isolateGroups": bool, "upToDate": bool,
//    "counts": {"added": n, "changed": n, "removed": n, "same": n, "invalid": n, "incomplete": n},
//    "items": [{"key", "state": "added"|"changed"|"removed"|"same", "order"?, "type"?, "title"?, "error"?,
//               "missing"?}, …]}
// Items are listed in display order (the pending version's `order`, else the published one's), then by key.
// `error` holds the user message of a pending item that would stop a publish; `missing` what a pending item lacks
// to be published (Completeness), when it lacks anything.

import CanopyCore

extension PublishEngine {
    /// The state of every item: `added` (only pending), `removed` (only published), `changed`, or `same`.
    public static func status(root: Node) -> JSONValue {
        let pending = root.node(at: PublishLayout.pendingContent)
        let content = root.node(at: PublishLayout.content)
        var keys = Set<JSONKey>(pending.childKeys.map(JSONKey.init))
        for key in content.childKeys { keys.insert(JSONKey(key)) }
        var rows: [(key: String, order: Double, json: JSONValue)] = []
        var counts: [String: Int64] = [
            "added": 0, "changed": 0, "removed": 0, "same": 0, "invalid": 0, "incomplete": 0,
        ]
        for key in keys.map(\.string) {
            let draft = pending.child(key)
            let published = content.child(key)
            let state: String
            switch (draft.isEmpty, published.isEmpty) {
            case (false, true): state = "added"
            case (true, false): state = "removed"
            default: state = draft == published ? "same" : "changed"
            }
            counts[state, default: 0] += 1
            let shown = draft.isEmpty ? published : draft
            var members = [JSONMember("key", .string(key)), JSONMember("state", .string(state))]
            for field in ["order", "type", "title"] {
                if let value = shown.child(field).value { members.append(JSONMember(field, value)) }
            }
            if !draft.isEmpty {
                do { _ = try ContentItem(key: key, node: draft) } catch {
                    counts["invalid", default: 0] += 1
                    members.append(JSONMember("error", .string(error.userMessage)))
                }
                let missing = missingFields(of: draft)
                if !missing.isEmpty {
                    counts["incomplete", default: 0] += 1
                    members.append(JSONMember("missing", .array(missing.map { .string($0) })))
                }
            }
            rows.append((key, FeedMerger.sortOrder(of: shown), .object(members)))
        }
        rows.sort { $0.order != $1.order ? $0.order < $1.order : compareKeys($0.key, $1.key) < 0 }
        let upToDate = counts["added"] == 0 && counts["changed"] == 0 && counts["removed"] == 0
        return .object([
            JSONMember("lastPublishedAt", root.node(at: PublishLayout.lastPublishedAt).value ?? .null),
            JSONMember("isolateGroups", .bool(PublishSettings(root: root).isolateGroups)),
            JSONMember("upToDate", .bool(upToDate)),
            JSONMember(
                "counts",
                .object(
                    ["added", "changed", "removed", "same", "invalid", "incomplete"].map {
                        JSONMember($0, .int(counts[$0]!))
                    })),
            JSONMember("items", .array(rows.map(\.json))),
        ])
    }
}
