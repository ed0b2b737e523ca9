// PublishHistory -- the record each publish leaves under private/admin/publishHistory, capped at 20 entries.
//
// Entry ids are push-id-like: 8 characters of the publish time (ms, base 64 in the push-id alphabet
// "-0-9A-Z_a-z", most significant first) and 12 characters that start at "------------" and are only raised
// when an entry at or after this time already exists (two publishes in one millisecond, or a clock that went
// back). Ids therefore sort in publish order under Firebase key order, and computing one is a pure function of
// the time and the existing ids, with no randomness.

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

    /// The record stored for one publish.
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
            ("content", content),
        ]
        if let publisher { fields.append(("publisher", Node(leaf: .string(publisher)))) }
        if let rollbackOf { fields.append(("rollbackOf", Node(leaf: .string(rollbackOf)))) }
        return Node(children: fields)
    }

    /// The writes that add a record for `content` and delete the oldest entries beyond `limit`.
    static func appendWrites(
        root: Node, content: Node, now: Int64, publisher: String?, rollbackOf: String? = nil
    )
        -> [(path: Path, node: Node)]
    {
        let history = root.node(at: PublishLayout.history)
        let id = nextID(existing: history, now: now)
        var writes: [(path: Path, node: Node)] = [
            (
                PublishLayout.history.child(id),
                record(content: content, now: now, publisher: publisher, rollbackOf: rollbackOf)
            )
        ]
        let excess = history.childCount + 1 - limit
        if excess > 0 {
            for key in history.childKeys.prefix(excess) {
                writes.append((PublishLayout.history.child(key), .empty))
            }
        }
        return writes
    }
}
