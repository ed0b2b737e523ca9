// ParsedItems -- the items of a namespace's last publish, parsed, kept for the next one.
//
// Nodes are immutable, so an item node parsed once parses the same way again: a publish that finds the node it
// parsed last time (the same instance, under the same key) reuses its `ContentItem` — its lists, its private copy
// and its CSV rows' copies — instead of parsing and copying it again. An incremental publish (one item edited
// among 1,000, one of them with 10,000 rows) then parses one item; and since the copies it places are the very
// nodes the derived locations already hold, comparing a location with its new content is an identity check per
// item. The cache holds the items of the last publish only (their nodes are in the tree anyway), its memo, and the
// version keys of the history entries it has read (PublishHistory.appendWrites); it is owned by the caller (the
// server keeps one per namespace), so the engine stays a pure function of its inputs.

import CanopyCore
import Dispatch
import Synchronization

/// Parsed items by node identity, and the last publish's memo. Thread-safe.
public final class ParsedItems: Sendable {
    private let items = Mutex<[ObjectIdentifier: ContentItem]>([:])
    /// The CSV items among `items`, by key: a changed CSV item reuses the rows it did not change.
    private let csvItems = Mutex<[JSONKey: ContentItem]>([:])
    /// The last publish's fan-out and facts (see PublishMemo).
    private let memo = Mutex<PublishMemo?>(nil)
    private let incremental = Atomic<Int>(0)
    /// The version keys of the history entries, by entry id (see `PublishHistory.appendWrites`).
    private let history = Mutex<[String: HistoryNames]>([:])

    /// An empty cache.
    public init() {}

    /// The parsed item for `node` under `key`, from the cache when it holds this very node under this key.
    func item(key: String, node: Node, into next: inout [ObjectIdentifier: ContentItem]) throws(PublishError)
        -> ContentItem
    {
        let id = ObjectIdentifier(node)
        // A hit holds `node` itself (`raw`), so the identifier cannot belong to another node meanwhile.
        if let known = items.withLock({ $0[id] }), known.raw === node, JSONKey.bytesEqual(known.key, key) {
            next[id] = known
            return known
        }
        let parsed = try ContentItem(key: key, node: node, previous: csvItems.withLock { $0[JSONKey(key)] })
        next[id] = parsed
        return parsed
    }

    /// Keeps `next` (the items of the publish just parsed) for the next one.
    func replace(with next: [ObjectIdentifier: ContentItem]) {
        var csv: [JSONKey: ContentItem] = [:]
        for item in next.values where item.isCSV { csv[JSONKey(item.key)] = item }
        items.withLock { $0 = next }
        csvItems.withLock { $0 = csv }
    }

    /// The last publish's memo brought to `items`, and what that touched; nil when there is none or the full
    /// computation must decide (see `PublishMemo.update`). The publish owns the memo while computing, so it
    /// changes it in place; one computed at the same time finds none and computes in full.
    func nextMemo(items: [ContentItem], settings: PublishSettings) -> (PublishMemo, PublishMemo.Touched)? {
        guard var last = memo.withLock({ $0.take() }) else { return nil }
        guard let touched = last.update(to: items, settings: settings) else {
            discard(last)
            return nil
        }
        incremental.add(1, ordering: .relaxed)
        return (last, touched)
    }

    /// Frees a memo that will not be used, on a background thread: freeing a fan-out of 10,000 attendees' copies
    /// (a dictionary per location) took about a fifth of a full publish's computation.
    private func discard(_ memo: consuming PublishMemo) {
        BackgroundRelease.release(memo)
    }

    /// Keeps `memo`, that of the publish just computed, for the next one.
    func keep(_ new: PublishMemo) {
        memo.withLock { $0 = new }
    }

    /// The version keys of history entries read by earlier publishes, by entry id.
    func historyNames() -> [String: HistoryNames] {
        history.withLock { $0 }
    }

    /// Keeps `names` (those of the history entries that stay) for the next publish.
    func keepHistoryNames(_ names: [String: HistoryNames]) {
        history.withLock { $0 = names }
    }

    /// How many publishes were computed from the memo rather than in full (tests).
    var incrementalPublishes: Int { incremental.load(ordering: .relaxed) }

    /// How many items are kept (tests).
    public var count: Int { items.withLock { $0.count } }
}
