// ContentItem -- one item of pendingContent, parsed for the visibility rule and the fan-out.
//
// An item is an object with `order` (a number, required), `type` (a string; missing means ""), the visibility
// lists `tierIds`, `groupIds`, `attendeeIds` (see IDList for the shapes), `checkAll` (a boolean; missing means
// false) and any type fields, which are carried untouched. An item whose type ends in `CSV` is a container: each
// child of its `rawData` (an array, stored as children "0", "1", …) is a row object that goes to the attendees its
// own `attendeeIds` name, under the key `<item key><row key>`.
//
// Visibility (seed semantics, issue 5): an attendee sees a non-CSV item when it is global (`checkAll`, or all
// three lists empty), or their tier is in `tierIds`, or one of their groups is in `groupIds`, or their id is in
// `attendeeIds`. A CSV item itself is never shown.

import CanopyCore

/// One parsed content item.
public struct ContentItem: Sendable {
    /// The names of the visibility lists, removed from private copies.
    public static let visibilityFields = ["tierIds", "groupIds", "attendeeIds"]

    /// The item key (a push id in the seed).
    public let key: String
    /// The display order; feeds sort by it, then by key.
    public let order: Double
    /// The item type (`text`, `web`, `textCSV`, …); "" when missing.
    public let type: String
    /// Tier ids in string form (`"101"`, `"default"`).
    public let tierIds: [String]
    /// Group ids in string form.
    public let groupIds: [String]
    /// Attendee ids.
    public let attendeeIds: [String]
    /// Whether the admin marked the item "everyone".
    public let checkAll: Bool
    /// The whole item as stored.
    public let raw: Node
    /// The rows of a CSV item's `rawData` (empty for other items).
    public let rawData: [CSVRow]

    /// Whether the item is a CSV container (its type ends in `CSV`).
    public let isCSV: Bool

    /// Whether everyone sees the item: `checkAll`, or no list names anyone. CSV containers are never global.
    public var isGlobal: Bool {
        !isCSV && (checkAll || (tierIds.isEmpty && groupIds.isEmpty && attendeeIds.isEmpty))
    }

    /// The item without its visibility lists: what a user, tier or isolated group location stores.
    public let privateCopy: Node

    /// Parses item `key` stored as `node`.
    /// - Parameter previous: The item parsed from an earlier node under the same key, if any: a CSV row whose node
    ///   is the very one parsed then (and whose item's `order` and `type` are unchanged) keeps its parsed row and
    ///   its copy, so rewriting or editing a few rows of 10,000 parses and copies those few.
    /// - Throws: `PublishError` naming `key` and the field: not an object, missing or non-numeric `order`,
    ///   malformed lists, ids that are not valid keys, malformed CSV rows.
    public init(key: String, node: Node, previous: ContentItem? = nil) throws(PublishError) {
        guard node.hasChildren else { throw PublishError(.itemNotObject, key: key) }
        self.key = key
        self.raw = node
        guard let order = try ContentItem.order(of: node, key: key, field: "order") else {
            throw PublishError(.missingOrder, key: key, field: "order")
        }
        self.order = order
        self.type = try ContentItem.type(of: node, key: key, field: "type") ?? ""
        tierIds = try IDList.parse(node.child("tierIds"), key: key, field: "tierIds")
        groupIds = try IDList.parse(node.child("groupIds"), key: key, field: "groupIds")
        attendeeIds = try IDList.parse(node.child("attendeeIds"), key: key, field: "attendeeIds")
        let flag = node.child("checkAll")
        if flag.isEmpty {
            checkAll = false
        } else if case .bool(let b)? = flag.value {
            checkAll = b
        } else {
            throw PublishError(.invalidField, key: key, field: "checkAll")
        }
        isCSV = type.hasSuffix("CSV")
        privateCopy = ContentItem.strippingLists(node)
        if isCSV {
            var reusable: [CSVRow] = []
            if let previous, previous.isCSV, JSONKey.bytesEqual(previous.key, key), previous.order == order,
                JSONKey.bytesEqual(previous.type, type)
            {
                reusable = previous.rawData
            }
            rawData = try CSVRow.rows(of: node, key: key, order: order, type: type, reusing: reusable)
        } else {
            rawData = []
        }
    }

    /// Whether `attendee` sees this item (never true for a CSV container; see `CSVRow.isVisible(to:)`).
    public func isVisible(to attendee: Attendee) -> Bool {
        if isCSV { return false }
        if isGlobal { return true }
        if tierIds.contains(where: { sameKey($0, attendee.tierId) }) { return true }
        if attendeeIds.contains(where: { sameKey($0, attendee.id) }) { return true }
        return groupIds.contains { group in attendee.groupIds.contains { sameKey($0, group) } }
    }

    /// `node` without `tierIds`, `groupIds` and `attendeeIds`, and with `extra` children set (one rebuild), its
    /// children packed as a parse packs them: a stored copy parsed from the same JSON then compares with it by
    /// bytes (`Node.packingChildren`), the largest part of comparing every derived location with what a publish
    /// places.
    static func strippingLists(_ node: Node, setting extra: [(key: String, node: Node)] = []) -> Node {
        let updates = visibilityFields.filter { node.hasChild($0) }.map { (key: $0, node: Node.empty) } + extra
        return node.updatingChildren(updates).packingChildren()
    }

    /// The `order` child as a double; nil when missing.
    static func order(of node: Node, key: String, field: String) throws(PublishError) -> Double? {
        let child = node.child("order")
        if child.isEmpty { return nil }
        switch child.value {
        case .int(let i)?: return Double(i)
        case .double(let d)?: return d
        default: throw PublishError(.nonNumericOrder, key: key, field: field)
        }
    }

    /// The `type` child as a string; nil when missing.
    static func type(of node: Node, key: String, field: String) throws(PublishError) -> String? {
        let child = node.child("type")
        if child.isEmpty { return nil }
        guard case .string(let s)? = child.value else {
            throw PublishError(.invalidField, key: key, field: field)
        }
        return s
    }
}

/// One row of a CSV item's `rawData`: a personal item for the attendees it names.
public struct CSVRow: Sendable {
    /// The row's key inside `rawData` (its index for an array).
    public let index: String
    /// The key of the copy: the parent key followed by `index` (`-OKzSJiMqgBxQZV5-STt0`).
    public let copyKey: String
    /// The attendees the row names (one in practice).
    public let attendeeIds: [String]
    /// The row as stored.
    public let raw: Node
    /// What the named attendees receive: the row without visibility lists, with the parent's `order` and type
    /// (minus `CSV`) filled in when the row has none.
    public let copy: Node

    /// Whether the row goes to `attendee`.
    public func isVisible(to attendee: Attendee) -> Bool {
        attendeeIds.contains { sameKey($0, attendee.id) }
    }

    /// The rows of CSV item `key` (stored as `node`), in key order. A row of `reusable` (the rows parsed from an
    /// earlier version of this item with the same `order` and `type`, in key order) whose node is this very row's
    /// is taken as it is: parsing is a pure function of the node, the key, the order and the type.
    static func rows(of node: Node, key: String, order: Double, type: String, reusing reusable: [CSVRow] = [])
        throws(PublishError) -> [CSVRow]
    {
        let data = node.child("rawData")
        if data.isEmpty { return [] }
        guard !data.isLeaf else { throw PublishError(.invalidField, key: key, field: "rawData") }
        var rows: [CSVRow] = []
        rows.reserveCapacity(data.childCount)
        var earlier = 0  // in `reusable`, walked beside the rows: both are in key order
        for (index, row) in data.children {
            while earlier < reusable.count, compareKeys(reusable[earlier].index, index) < 0 { earlier += 1 }
            if earlier < reusable.count, reusable[earlier].raw === row,
                JSONKey.bytesEqual(reusable[earlier].index, index)
            {
                rows.append(reusable[earlier])
                continue
            }
            let field = "rawData/\(index)"
            guard row.hasChildren else { throw PublishError(.invalidField, key: key, field: field) }
            let copyKey = key + index
            guard Key.isValid(copyKey) else { throw PublishError(.invalidID, key: key, field: field) }
            let ids = try IDList.parse(row.child("attendeeIds"), key: key, field: field + "/attendeeIds")
            var inherited: [(key: String, node: Node)] = []
            if try ContentItem.order(of: row, key: key, field: field + "/order") == nil {
                inherited.append(("order", Node(leaf: ContentItem.orderValue(order))))
            }
            if try ContentItem.type(of: row, key: key, field: field + "/type") == nil {
                inherited.append(("type", Node(leaf: .string(String(type.dropLast(3))))))
            }
            let copy = ContentItem.strippingLists(row, setting: inherited)
            rows.append(CSVRow(index: index, copyKey: copyKey, attendeeIds: ids, raw: row, copy: copy))
        }
        return rows
    }
}

extension CSVRow {
    /// The rows of `old` that `new` no longer places as they were, and the rows of `new` placed anew: a row is
    /// unchanged when both lists hold it under the same key with the very same node and copy (both lists are in
    /// key order, as `rows(of:…)` returns them).
    static func changes(from old: [CSVRow], to new: [CSVRow]) -> (gone: [CSVRow], came: [CSVRow]) {
        var gone: [CSVRow] = []
        var came: [CSVRow] = []
        var i = 0
        for row in new {
            while i < old.count, compareKeys(old[i].index, row.index) < 0 {
                gone.append(old[i])
                i += 1
            }
            if i < old.count, JSONKey.bytesEqual(old[i].index, row.index) {
                if old[i].raw !== row.raw || old[i].copy !== row.copy {
                    gone.append(old[i])
                    came.append(row)
                }
                i += 1
            } else {
                came.append(row)
            }
        }
        gone += old[i...]
        return (gone, came)
    }
}

extension ContentItem {
    /// An order as a JSON number, integral values as integers (`8`, not `8.0`).
    static func orderValue(_ order: Double) -> JSONValue {
        if let i = Int64(exactly: order) { return .int(i) }
        return .double(order)
    }
}
