// PublishMemo -- what a namespace's last publish computed, so the next one redoes only what its edits touch.
//
// A full publish places every item's copies (100,000 for 10,000 attendees) and then compares every derived
// location (10,051) with what it should hold, item by item. For one edited item among 1,000 that was 40 ms of
// the 43 ms a publish took (Architecture.md#Publishing-item-by-item). The memo keeps the last fan-out and two
// kinds of facts, so that the next publish:
// - redoes the placements of the items whose node changed (by instance: nodes are immutable, so an item node
//   that is the same instance as last time parses and places as it did; `ParsedItems` hands back the very
//   `ContentItem`), and marks the locations those items were or are placed in as touched;
// - compares in full only the touched locations and those it cannot vouch for. A location is vouched for when
//   the node stored there now is the very instance an earlier publish compared and found equal to the fan-out's
//   content for it (`walked`, vouched): an immutable node that was equal is still equal, so one pointer
//   comparison per location replaces the comparison of its items. Anything written there since — by this engine
//   or by anyone else, through any API — is a new instance (or a gone one), and is compared in full again. The
//   family's children are walked beside the last walk's in key order, so no id is hashed.
// Every fact is about immutable nodes, never about the tree: a publish whose commit fails, or a foreign write
// to a derived location, makes no fact false; it only makes a location unvouched for, so it is compared in full.
// Any surprise (a key collision, changed settings, most items changed) falls back to the full computation,
// which is what decides the error to report.

import CanopyCore

/// The last publish's fan-out and what is known about the derived locations (see the file comment).
struct PublishMemo: Sendable {
    /// The derived families, in write order: users, tiers, isolated groups.
    static let familyCount = 3

    /// The settings the fan-out was computed with.
    var settings: PublishSettings
    /// The published items by key.
    var items: [JSONKey: ContentItem]
    /// Item keys and CSV row copy keys, all distinct (the full fan-out's collision check).
    var usedKeys: Set<JSONKey>
    /// The fan-out of `items`.
    var fan: FanOut
    /// A `public/admin/content` node found equal to `fan.publicContent`.
    var verifiedPublic: Node?
    /// Per family: its children as the last publish walked them, in tree order (see `Walked`).
    var walked: [[Walked]]
    /// Per family: ids the fan-out gives content that no stored node is vouched for (written by the last
    /// publish, or never compared): compared in full by the next publish even when absent from the tree.
    var unverified: [Set<JSONKey>]
    /// Nothing is known about the tree yet: every id of the fan-out is compared (as if all were `unverified`).
    var fresh = true

    /// A memo of a fully computed fan-out, with nothing known about the tree yet.
    init(settings: PublishSettings, items: [ContentItem], fan: FanOut) {
        self.settings = settings
        self.items = Dictionary(items.map { (JSONKey($0.key), $0) }, uniquingKeysWith: { a, _ in a })
        var keys = Set<JSONKey>()
        for item in items {
            keys.insert(JSONKey(item.key))
            for row in item.rawData { keys.insert(JSONKey(row.copyKey)) }
        }
        usedKeys = keys
        self.fan = fan
        walked = Array(repeating: [], count: Self.familyCount)
        unverified = Array(repeating: [], count: Self.familyCount)
    }

    /// A child of a family node (`<family>/<id>`) as a publish saw it.
    struct Walked: Sendable {
        /// The id.
        var key: String
        /// The node stored there.
        var node: Node
        /// Whether `node`'s `content` was found to hold exactly the fan-out's bucket for `key` (nothing, when
        /// the fan-out has none).
        var vouched: Bool
    }

    /// The fan-out's buckets of family `f`.
    func buckets(_ f: Int) -> [String: [String: Node]] {
        switch f {
        case 0: fan.users
        case 1: fan.tiers
        default: fan.groups
        }
    }

    /// The derived locations an update of the memo touched: their content may differ from what was verified.
    struct Touched: Sendable {
        var publicContent = false
        var ids: [Set<JSONKey>] = Array(repeating: [], count: PublishMemo.familyCount)
    }

    /// Brings the memo to `items` by redoing only the placements of the items that changed.
    ///
    /// - Returns: The touched locations, or nil when the full computation must decide (settings changed, more
    ///   than `max(16, items/4)` items changed, or a key collision: the full fan-out reports it). The memo is
    ///   then in no defined state and must be dropped.
    mutating func update(to items: [ContentItem], settings: PublishSettings) -> Touched? {
        guard settings == self.settings else { return nil }
        var removed: [ContentItem] = []
        var added: [ContentItem] = []
        // CSV items changed in place: only the rows that changed are placed again.
        var csvEdits: [(old: ContentItem, new: ContentItem)] = []
        // The items replaced are usually their last references: a CSV item of 10,000 rows took 3–4 ms to free, on
        // the publish's critical path. They are freed on the release thread instead.
        defer { BackgroundRelease.release((removed, csvEdits.map(\.old))) }
        var kept = 0
        let limit = Swift.max(16, items.count / 4)
        for item in items {
            if let old = self.items[JSONKey(item.key)] {
                kept += 1
                if old.raw === item.raw { continue }
                if old.isCSV && item.isCSV {
                    csvEdits.append((old, item))
                    if added.count + csvEdits.count > limit { return nil }
                    continue
                }
                removed.append(old)
            }
            added.append(item)
            if added.count + csvEdits.count > limit { return nil }
        }
        if kept < self.items.count {
            let present = Set(items.map { JSONKey($0.key) })
            for (key, old) in self.items where !present.contains(key) { removed.append(old) }
        }
        guard removed.count + added.count + 2 * csvEdits.count <= 2 * limit else { return nil }
        var touched = Touched()
        for item in removed { unplace(item, touched: &touched) }
        var addedRows: [(item: ContentItem, rows: [CSVRow])] = []
        for (old, new) in csvEdits {
            let (gone, came) = CSVRow.changes(from: old.rawData, to: new.rawData)
            for row in gone { unplace(row, touched: &touched) }
            addedRows.append((new, came))
            self.items[JSONKey(new.key)] = new
        }
        for item in added {
            guard usedKeys.insert(JSONKey(item.key)).inserted else { return nil }
        }
        for (item, rows) in addedRows {
            for row in rows {
                guard usedKeys.insert(JSONKey(row.copyKey)).inserted else { return nil }
                do throws(PublishError) {
                    try place(row, of: item, touched: &touched)
                } catch {
                    return nil
                }
            }
        }
        for item in added {
            for row in item.rawData {
                guard usedKeys.insert(JSONKey(row.copyKey)).inserted else { return nil }
            }
            do throws(PublishError) {
                try place(item, touched: &touched)
            } catch {
                return nil
            }
            self.items[JSONKey(item.key)] = item
        }
        return touched
    }

    /// Removes every copy `item` placed, and its keys.
    private mutating func unplace(_ item: ContentItem, touched: inout Touched) {
        let key = item.key
        self.items.removeValue(forKey: JSONKey(key))
        usedKeys.remove(JSONKey(key))
        if item.isCSV {
            for row in item.rawData { unplace(row, touched: &touched) }
            return
        }
        if item.isGlobal || (!item.groupIds.isEmpty && !settings.isolateGroups) {
            fan.publicContent.removeValue(forKey: key)
            touched.publicContent = true
        }
        if item.isGlobal { return }
        if settings.isolateGroups {
            for id in item.groupIds { Self.remove(key, from: &fan.groups, id: id, family: 2, touched: &touched) }
        }
        for id in item.tierIds { Self.remove(key, from: &fan.tiers, id: id, family: 1, touched: &touched) }
        for id in item.attendeeIds { Self.remove(key, from: &fan.users, id: id, family: 0, touched: &touched) }
    }

    /// Removes the copies a CSV row placed, and its key.
    private mutating func unplace(_ row: CSVRow, touched: inout Touched) {
        usedKeys.remove(JSONKey(row.copyKey))
        for id in row.attendeeIds {
            Self.remove(row.copyKey, from: &fan.users, id: id, family: 0, touched: &touched)
        }
    }

    /// Removes the copy under `key` from bucket `id`, marking the location touched.
    private static func remove(
        _ key: String, from buckets: inout [String: [String: Node]], id: String, family f: Int,
        touched: inout Touched
    ) {
        touched.ids[f].insert(JSONKey(id))
        guard var bucket = buckets.removeValue(forKey: id) else { return }
        bucket.removeValue(forKey: key)
        if !bucket.isEmpty { buckets[id] = bucket }
    }

    /// Places a CSV row's copies (rows of `item`) as `PublishEngine.fanOut(items:settings:)` does.
    private mutating func place(_ row: CSVRow, of item: ContentItem, touched: inout Touched) throws(PublishError) {
        for id in row.attendeeIds {
            touched.ids[0].insert(JSONKey(id))
            try FanOut.place(row.copy, key: row.copyKey, in: &fan.users, id: id, item: item.key, field: nil)
        }
    }

    /// Places `item`'s copies as `PublishEngine.fanOut(items:settings:)` does.
    private mutating func place(_ item: ContentItem, touched: inout Touched) throws(PublishError) {
        if item.isCSV {
            for row in item.rawData { try place(row, of: item, touched: &touched) }
            return
        }
        if item.isGlobal || (!item.groupIds.isEmpty && !settings.isolateGroups) {
            touched.publicContent = true
            try FanOut.placePublic(item, in: &fan)
        }
        if item.isGlobal { return }
        let copy = item.privateCopy
        if settings.isolateGroups {
            for id in item.groupIds {
                touched.ids[2].insert(JSONKey(id))
                try FanOut.place(copy, key: item.key, in: &fan.groups, id: id, item: item.key, field: nil)
            }
        }
        for id in item.tierIds {
            touched.ids[1].insert(JSONKey(id))
            try FanOut.place(copy, key: item.key, in: &fan.tiers, id: id, item: item.key, field: nil)
        }
        for id in item.attendeeIds {
            touched.ids[0].insert(JSONKey(id))
            try FanOut.place(copy, key: item.key, in: &fan.users, id: id, item: item.key, field: nil)
        }
    }
}
