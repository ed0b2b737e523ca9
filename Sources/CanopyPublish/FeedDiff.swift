// FeedDiff -- what one attendee gains, loses and sees change between two feeds (for the dry run).
//
// Both feeds are sorted by (order, key), so one merge-like walk pairs equal keys in O(n) without hashing. An item
// whose order changed is out of step in the walk: such leftovers (few in practice) are matched by key afterwards.
// Two copies are "changed" when their hashes differ; hashes are cached per node, so an item compared for
// thousands of attendees is hashed once.

import CanopyCore

/// The difference between two feeds, keys in Firebase key order.
struct FeedDiff {
    var added: [String] = []
    var removed: [String] = []
    var changed: [String] = []

    var isEmpty: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }

    init(old: [FeedMerger.Entry], new: [FeedMerger.Entry]) {
        var onlyOld: [FeedMerger.Entry] = []
        var onlyNew: [FeedMerger.Entry] = []
        var i = 0
        var j = 0
        while i < old.count && j < new.count {
            let a = old[i]
            let b = new[j]
            if a.order == b.order && sameKey(a.key, b.key) {
                if FeedDiff.differ(a.item, b.item) { changed.append(a.key) }
                i += 1
                j += 1
            } else if FeedMerger.Entry.precedes(a, b) {
                onlyOld.append(a)
                i += 1
            } else {
                onlyNew.append(b)
                j += 1
            }
        }
        onlyOld += old[i...]
        onlyNew += new[j...]
        if !onlyOld.isEmpty || !onlyNew.isEmpty {
            var leftover: [JSONKey: Node] = [:]
            for entry in onlyOld { leftover[JSONKey(entry.key)] = entry.item }
            for entry in onlyNew {
                if let previous = leftover.removeValue(forKey: JSONKey(entry.key)) {
                    if FeedDiff.differ(previous, entry.item) { changed.append(entry.key) }
                } else {
                    added.append(entry.key)
                }
            }
            removed = onlyOld.map(\.key).filter { leftover[JSONKey($0)] != nil }
        }
        let byKey: (String, String) -> Bool = { compareKeys($0, $1) < 0 }
        added.sort(by: byKey)
        removed.sort(by: byKey)
        changed.sort(by: byKey)
    }

    /// Whether two copies of an item differ (`Node.hasSameData`: identity, cached hashes, then structure).
    static func differ(_ a: Node, _ b: Node) -> Bool {
        !a.hasSameData(as: b)
    }
}
