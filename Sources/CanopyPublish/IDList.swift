// IDList -- reading the tier, group and attendee id lists of items and directories in every stored shape.
//
// Shapes accepted (the seed export and what Firebase makes of it): missing, `null`, `[]` and `{}` mean empty; an
// array `[101, "default"]` (stored as children "0", "1"); a map `{"101": true}` (the key is the id). Each element
// must be a string or a number; numbers become their decimal form (`101`, `2.5`), strings stay as they are
// (`"default"`). Duplicates are dropped, first occurrence wins. Every id must be a valid database key because
// tier, group and attendee ids become path segments (`tiers/101`).

import CanopyCore

enum IDList {
    /// The id list stored at `list`, in stored order without duplicates.
    ///
    /// - Parameters:
    ///   - list: The list node (empty for a missing list).
    ///   - key: The item key, for errors.
    ///   - field: The field path inside the item, for errors (`tierIds`, `rawData/0/attendeeIds`).
    static func parse(_ list: Node, key: String, field: String) throws(PublishError) -> [String] {
        if list.isEmpty { return [] }
        guard !list.isLeaf else { throw PublishError(.invalidField, key: key, field: field) }
        var ids: [String] = []
        var seen = Set<JSONKey>()
        for (childKey, child) in list.children {
            let id: String
            switch child.value {
            case .bool(true)?: id = childKey
            case let value?:
                guard let text = text(of: value) else {
                    throw PublishError(.invalidField, key: key, field: "\(field)/\(childKey)")
                }
                id = text
            case nil:
                throw PublishError(.invalidField, key: key, field: "\(field)/\(childKey)")
            }
            guard Key.isValid(id) else {
                throw PublishError(.invalidID, key: key, field: "\(field)/\(childKey)")
            }
            if seen.insert(JSONKey(id)).inserted { ids.append(id) }
        }
        return ids
    }

    /// The id form of a primitive: strings as they are, integers in decimal, other numbers in JavaScript form;
    /// nil for booleans, null, objects and arrays.
    static func text(of value: JSONValue) -> String? {
        switch value {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d):
            if let i = Int64(exactly: d) { return String(i) }
            return d.isFinite ? JSONNumberFormat.text(d) : nil
        case .null, .bool, .array, .object: return nil
        }
    }
}
