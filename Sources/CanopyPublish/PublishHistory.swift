// PublishHistory -- the record each publish leaves under private/admin/publishHistory, capped at 20 entries.
//
// Entry ids are push-id-like: 8 characters of the publish time (ms, base 64 in the push-id alphabet
// "-0-9A-Z_a-z", most significant first) and 12 characters that start at "------------" and are only raised
// when an entry at or after this time already exists (two publishes in one millisecond, or a clock that went
// back). Ids therefore sort in publish order under Firebase key order, and computing one is a pure function of
// the time and the existing ids, with no randomness.
//
// An entry names its snapshot item by item: its `versions` string holds, as JSON text, each item key and the key
// of that item's version under `private/admin/publishedVersions`, where each distinct item body is stored once,
// keyed by its hash, as its export-format JSON text (one row, however large the item; the tree itself when the
// text would exceed the string limit). A publish that changed one item stores that one version and one row of
// keys, not a copy of every item; versions no entry names any more are deleted with the entries that named them.
// Entries of earlier layouts are still read: one child per item under `items`, or the whole snapshot under
// `content` (Architecture.md#Publishing-item-by-item).

import CanopyCore

/// Publish history records and their ids.
public enum PublishHistory {
    /// How many entries are kept; older ones are deleted in the same commit that adds a new one.
    public static let limit = 20

    static let alphabet = Array(
        "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)

    /// The id for an entry published at `now`, greater than every id in `existing` (the history node).
    public static func nextID(existing: Node, now: Int64) -> String {
        var time = UInt64(max(now, 0))
        var bytes = [UInt8](repeating: alphabet[0], count: 20)
        for i in stride(from: 7, through: 0, by: -1) {
            bytes[i] = alphabet[Int(time % 64)]
            time /= 64
        }
        let candidate = String(decoding: bytes, as: UTF8.self)
        guard let last = existing.childKeys.last, compareKeys(candidate, last) <= 0 else {
            return candidate
        }
        return successor(of: last)
    }

    /// The smallest push-alphabet id above `id` of the same length, or `id` + "-" when there is none.
    static func successor(of id: String) -> String {
        var bytes = Array(id.utf8)
        var i = bytes.count - 1
        while i >= 0 {
            guard let digit = alphabet.firstIndex(of: bytes[i]) else { break }
            if digit + 1 < alphabet.count {
                bytes[i] = alphabet[digit + 1]
                for j in (i + 1)..<bytes.count { bytes[j] = alphabet[0] }
                return String(decoding: bytes, as: UTF8.self)
            }
            i -= 1
        }
        // Not a push-alphabet id, or all "z": a longer id with this prefix sorts after it.
        return id + "-"
    }

    /// The key under `PublishLayout.versions` of an item body: its hash, with `+` and `/` (not allowed in keys)
    /// spelled `-` and `_`, and without padding.
    public static func versionKey(_ item: Node) -> String {
        var bytes: [UInt8] = []
        for byte in item.hash.utf8 {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): bytes.append(UInt8(ascii: "_"))
            case UInt8(ascii: "="): continue
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The record stored for one publish: who, when, how many items, the content's hash, and each item's version.
    ///
    /// The versions are one string leaf, `versions`: the JSON text of `{"<item key>": "<version key>", …}` in key
    /// order. One row, not one per item: a publish that changed one item among 1,000 wrote 1,000 rows for its
    /// record, which was 6 of the 10 ms it took (Architecture.md#Publishing-item-by-item). Content whose text
    /// would pass the string limit keeps one child per item under `items`, the layout before this one.
    ///
    /// - Parameters:
    ///   - content: The published snapshot.
    ///   - now: Server time in ms.
    ///   - publisher: The publishing token's `uid`, if any.
    ///   - rollbackOf: The history id being republished, for rollbacks.
    public static func record(
        content: Node, now: Int64, publisher: String?, rollbackOf: String? = nil
    ) -> Node {
        record(
            content: content, versions: content.children.map { ($0.key, versionKey($0.node)) }, now: now,
            publisher: publisher, rollbackOf: rollbackOf)
    }

    /// The record for `content`, whose items' version keys are `versions` (in `content`'s order).
    static func record(
        content: Node, versions: [(key: String, version: String)], now: Int64, publisher: String?,
        rollbackOf: String?
    ) -> Node {
        var fields: [(key: String, node: Node)] = [
            ("publishedAt", Node(leaf: .int(now))),
            ("itemCount", Node(leaf: .int(Int64(content.childCount)))),
            ("contentHash", Node(leaf: .string(content.hash))),
        ]
        var text: [UInt8] = [UInt8(ascii: "{")]
        for (key, version) in versions {
            if text.count > 1 { text.append(UInt8(ascii: ",")) }
            JSONValue.writeQuoted(key, into: &text)
            text.append(UInt8(ascii: ":"))
            JSONValue.writeQuoted(version, into: &text)
        }
        text.append(UInt8(ascii: "}"))
        if text.count <= Node.maxStringBytes {
            fields.append(("versions", Node(leaf: .string(String(decoding: text, as: UTF8.self)))))
        } else {
            fields.append(("items", Node(children: versions.map { ($0.key, Node(leaf: .string($0.version))) })))
        }
        if let publisher { fields.append(("publisher", Node(leaf: .string(publisher)))) }
        if let rollbackOf { fields.append(("rollbackOf", Node(leaf: .string(rollbackOf)))) }
        return Node(children: fields)
    }

    /// The item keys of history entry `entry` and the version each names, in key order: from its `versions` text
    /// or its `items` children; nil when it has neither or they are unreadable (an entry that holds its snapshot
    /// whole under `content` names no version).
    public static func itemVersions(of entry: Node) -> [(key: String, version: String)]? {
        if case .string(let text)? = entry.child("versions").value {
            guard case .object(let members)? = try? JSONValue.parse(text) else { return nil }
            var out: [(key: String, version: String)] = []
            out.reserveCapacity(members.count)
            for member in members {
                guard case .string(let version) = member.value else { return nil }
                out.append((member.key, version))
            }
            return out
        }
        let items = entry.child("items")
        guard items.hasChildren else { return nil }
        var out: [(key: String, version: String)] = []
        for (key, version) in items.children {
            guard case .string(let name)? = version.value else { return nil }
            out.append((key, name))
        }
        return out
    }

    /// The snapshot of the history entry stored under `id`; nil when there is none or it cannot be put together
    /// (what a rollback to `id` would publish).
    public static func snapshot(id: String, root: Node) -> Node? {
        let entry = root.node(at: PublishLayout.history).child(id)
        guard entry.hasChild("publishedAt") else { return nil }
        return snapshot(of: entry, root: root)
    }

    /// The snapshot history entry `entry` names: its items' versions (or, for an entry written before versions
    /// existed, its `content`); nil when a version it names is missing.
    public static func snapshot(of entry: Node, root: Node) -> Node? {
        if entry.hasChild("content") { return entry.child("content") }
        let versions = root.node(at: PublishLayout.versions)
        // An entry of nothing published (every item unpublished) has no version to name.
        let named = itemVersions(of: entry) ?? (entry.child("itemCount").value == .int(0) ? [] : nil)
        guard let named else { return nil }
        var items: [(key: String, node: Node)] = []
        items.reserveCapacity(named.count)
        for (key, name) in named {
            guard let item = item(stored: versions.child(name)) else { return nil }
            items.append((key, item))
        }
        return Node(children: items)
    }

    /// What `publishedVersions` stores for an item: its JSON text, or the item itself when that is too long.
    static func stored(_ item: Node) -> Node {
        var text: [UInt8] = []
        item.writeJSON(export: true, into: &text)
        guard text.count <= Node.maxStringBytes else { return item }
        return Node(leaf: .string(String(decoding: text, as: UTF8.self)))
    }

    /// The item a `publishedVersions` entry holds; nil when it is missing or unreadable.
    static func item(stored: Node) -> Node? {
        guard case .string(let text)? = stored.value else { return stored.isEmpty ? nil : stored }
        guard let json = try? JSONValue.parse(text), let item = try? Node.from(json: json), !item.isEmpty else {
            return nil
        }
        return item
    }

    /// The writes that add a record for `content`, store the item versions it names that are not stored yet,
    /// delete the oldest entries beyond `limit`, and the versions that no remaining entry names.
    static func appendWrites(
        root: Node, content: Node, now: Int64, publisher: String?, rollbackOf: String? = nil,
        cache: ParsedItems? = nil
    )
        -> [(path: Path, node: Node)]
    {
        let history = root.node(at: PublishLayout.history)
        let versions = root.node(at: PublishLayout.versions)
        let id = nextID(existing: history, now: now)
        let itemVersions = content.children.map { ($0.key, versionKey($0.node)) }
        let entry = record(
            content: content, versions: itemVersions, now: now, publisher: publisher, rollbackOf: rollbackOf)
        var writes: [(path: Path, node: Node)] = [(PublishLayout.history.child(id), entry)]
        // Versions, in key order (the writes of one commit are disjoint: each new version once).
        var named = Set<String>()  // by the new entry
        named.reserveCapacity(itemVersions.count)
        var added: [String: Node] = [:]
        for (item, (_, name)) in zip(content.children, itemVersions) {
            named.insert(name)
            if !versions.hasChild(name) && added[name] == nil { added[name] = stored(item.node) }
        }
        var names = cache?.historyNames() ?? [:]
        names[id] = HistoryNames(entry: entry, names: named)
        let excess = history.childCount + 1 - limit
        var dropped: [String] = []
        if excess > 0 {
            // A dropped entry's version goes when no entry that stays names it. Most are named by the new entry
            // too; only the rest (items changed since) are looked up in the entries kept, oldest first: the
            // entries next to a dropped one are the likeliest to name its versions.
            var unnamed = Set<String>()
            for (key, old) in history.children.prefix(excess) {
                writes.append((PublishLayout.history.child(key), .empty))
                let known = HistoryNames.reading(old, known: names[key])
                names[key] = nil
                for name in known.names where !named.contains(name) && versions.hasChild(name) { unnamed.insert(name) }
            }
            for (key, kept) in history.children.dropFirst(excess) where !unnamed.isEmpty {
                let known = HistoryNames.reading(kept, known: names[key])
                names[key] = known
                unnamed = unnamed.filter { !known.names.contains($0) }  // not subtract: that hashes all of `known`
            }
            dropped = Array(unnamed)  // sorted with the other version writes below
        }
        // Kept for the next publish: the names of the entries that stay (read once each, while they stay).
        cache?.keepHistoryNames(names.filter { $0.key == id || history.hasChild($0.key) })
        let versionWrites = added.map { ($0.key, $0.value) } + dropped.map { ($0, Node.empty) }
        for (name, node) in versionWrites.sorted(by: { compareKeys($0.0, $1.0) < 0 }) {
            writes.append((PublishLayout.versions.child(name), node))
        }
        return writes
    }
}

/// The version keys a history entry names, with the text they were read from: still true of the entry stored
/// under the same id when its `versions` text is the same (an entry rewritten by anyone else is read again).
struct HistoryNames: Sendable {
    /// The entry's `versions` text (nil for an entry of another layout).
    let text: String?
    /// The version keys it names.
    let names: Set<String>

    init(entry: Node, names: Set<String>) {
        text = Self.text(of: entry)
        self.names = names
    }

    /// `known` when it was read from `entry`'s text, else `entry` read now.
    static func reading(_ entry: Node, known: HistoryNames?) -> HistoryNames {
        let text = Self.text(of: entry)
        if let known, let text, let knownText = known.text, sameKey(knownText, text) { return known }  // bytes, not `==`
        return HistoryNames(
            entry: entry, names: Set(PublishHistory.itemVersions(of: entry)?.map(\.version) ?? []))
    }

    private static func text(of entry: Node) -> String? {
        if case .string(let text)? = entry.child("versions").value { return text }
        return nil
    }
}
