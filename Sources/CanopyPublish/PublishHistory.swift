// PublishHistory -- the record each publish leaves under private/admin/publishHistory, capped at 20 entries.
//
// Entry ids are push-id-like: 8 characters of the publish time (ms, base 64 in the push-id alphabet
// "-0-9A-Z_a-z", most significant first) and 12 characters that start at "------------" and are only raised
// when an entry at or after this time already exists (two publishes in one millisecond, or a clock that went
// back). Ids therefore sort in publish order under Firebase key order, and computing one is a pure function of
// the time and the existing ids, with no randomness.
//
// An entry names its snapshot item by item: `items/<item key>` holds the key of that item's version under
// `private/admin/publishedVersions`, where each distinct item body is stored once, keyed by its hash, as its
// export-format JSON text (one row, however large the item; the tree itself when the text would exceed the
// string limit). A publish that changed one item stores that one row and a list of keys, not a copy of every
// item; versions no entry names any more are deleted with the entries that named them. Entries written before this layout hold the whole
// snapshot under `content` and are still read (Architecture.md#Publishing-item-by-item).

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
    /// - Parameters:
    ///   - content: The published snapshot.
    ///   - now: Server time in ms.
    ///   - publisher: The publishing token's `uid`, if any.
    ///   - rollbackOf: The history id being republished, for rollbacks.
    public static func record(
        content: Node, now: Int64, publisher: String?, rollbackOf: String? = nil
    ) -> Node {
        var fields: [(key: String, node: Node)] = [
            ("publishedAt", Node(leaf: .int(now))),
            ("itemCount", Node(leaf: .int(Int64(content.childCount)))),
            ("contentHash", Node(leaf: .string(content.hash))),
            ("items", Node(children: content.children.map { ($0.key, Node(leaf: .string(versionKey($0.node)))) })),
        ]
        if let publisher { fields.append(("publisher", Node(leaf: .string(publisher)))) }
        if let rollbackOf { fields.append(("rollbackOf", Node(leaf: .string(rollbackOf)))) }
        return Node(children: fields)
    }

    /// The snapshot history entry `entry` names: its items' versions (or, for an entry written before versions
    /// existed, its `content`); nil when a version it names is missing.
    public static func snapshot(of entry: Node, root: Node) -> Node? {
        if entry.hasChild("content") { return entry.child("content") }
        let versions = root.node(at: PublishLayout.versions)
        var items: [(key: String, node: Node)] = []
        for (key, version) in entry.child("items").children {
            guard case .string(let name)? = version.value, let item = item(stored: versions.child(name)) else {
                return nil
            }
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
        root: Node, content: Node, now: Int64, publisher: String?, rollbackOf: String? = nil
    )
        -> [(path: Path, node: Node)]
    {
        let history = root.node(at: PublishLayout.history)
        let versions = root.node(at: PublishLayout.versions)
        let id = nextID(existing: history, now: now)
        let entry = record(content: content, now: now, publisher: publisher, rollbackOf: rollbackOf)
        var writes: [(path: Path, node: Node)] = [(PublishLayout.history.child(id), entry)]
        // Versions, in key order (the writes of one commit are disjoint: each new version once).
        var added: [String: Node] = [:]
        for (_, item) in content.children {
            let name = versionKey(item)  // hashes are cached: computed once for the record above
            if !versions.hasChild(name) && added[name] == nil { added[name] = stored(item) }
        }
        let excess = history.childCount + 1 - limit
        var dropped: [String] = []
        if excess > 0 {
            var named = Set<String>()
            for (_, kept) in history.children.dropFirst(excess) { named.formUnion(versionNames(kept)) }
            named.formUnion(versionNames(entry))
            for (key, old) in history.children.prefix(excess) {
                writes.append((PublishLayout.history.child(key), .empty))
                for name in versionNames(old) where !named.contains(name) && versions.hasChild(name) {
                    named.insert(name)  // once, however many dropped entries name it
                    dropped.append(name)
                }
            }
        }
        let versionWrites = added.map { ($0.key, $0.value) } + dropped.map { ($0, Node.empty) }
        for (name, node) in versionWrites.sorted(by: { compareKeys($0.0, $1.0) < 0 }) {
            writes.append((PublishLayout.versions.child(name), node))
        }
        return writes
    }

    /// The version keys history entry `entry` names (none for an entry that holds its snapshot whole).
    private static func versionNames(_ entry: Node) -> [String] {
        entry.child("items").children.compactMap { version in
            if case .string(let name)? = version.node.value { return name }
            return nil
        }
    }
}
