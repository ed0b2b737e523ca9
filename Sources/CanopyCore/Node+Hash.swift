// Node+Hash -- the Firebase wire hash (Protocol.md#Hashes) and the REST ETag built on it.
//
// Recipe (must match the clients bit for bit):
//   - empty node → "" (not hashed);
//   - leaf → b64(sha1(P + type + value)) where P = "priority:" + priorityText + ":" when a priority exists,
//     type+value is "boolean:true|false", "number:" + 16 lowercase hex digits of the big-endian IEEE-754 double
//     (integers converted to double first), or "string:" + the raw string;
//   - internal → b64(sha1(P + concat(":" + key + ":" + childHash))) over the children in priority-index order
//     (no priority, then numeric, then string priorities; ties by key order), skipping children whose hash is "".
// The JavaScript SDK mis-encodes a few tiny negative powers of two; Canopy uses the exact bits, as Android and
// iOS do. Hashes are cached per node, so repeated hashing of an unchanged subtree is O(1).

extension Node {
    /// The Firebase data hash of this node, priorities included; `""` for the empty node.
    public var hash: String {
        if let cached = hashCache.withLock({ $0 }) { return cached }
        let computed = computeHash()
        hashCache.withLock { $0 = computed }
        return computed
    }

    /// The REST ETag: `null_etag` for the empty node, otherwise `hash`.
    public var etag: String { isEmpty ? Node.nullETag : hash }

    /// The ETag of an empty location.
    public static let nullETag = "null_etag"

    private func computeHash() -> String {
        if isEmpty { return "" }
        var text = ""
        if let p = priorityValue {
            text += "priority:"
            Node.appendHashText(of: p, to: &text)
            text += ":"
        }
        if let leaf = leafValue {
            Node.appendHashText(of: leaf, to: &text)
            return Hash.sha1Base64(text)
        }
        for entry in childrenInPriorityOrder() {
            let childHash = entry.node.hash
            if childHash.isEmpty { continue }
            text += ":"
            text += entry.key
            text += ":"
            text += childHash
        }
        return text.isEmpty ? "" : Hash.sha1Base64(text)
    }

    /// Children sorted by the priority index: no priority first, then numbers, then strings, ties by key.
    func childrenInPriorityOrder() -> [(key: String, node: Node)] {
        guard entries.contains(where: { $0.node.priorityValue != nil }) else { return Array(entries) }
        // Stable partition keeps key order within the unprioritised run; sort the rest.
        let plain = entries.filter { $0.node.priorityValue == nil }
        var prioritised = entries.filter { $0.node.priorityValue != nil }
        prioritised.sort { a, b in
            let c = comparePrimitives(a.node.priorityValue!, b.node.priorityValue!)
            return c != 0 ? c < 0 : compareKeys(a.key, b.key) < 0
        }
        return plain + prioritised
    }

    /// Appends `number:<hex>`, `string:<raw>` or `boolean:<b>`.
    static func appendHashText(of value: JSONValue, to text: inout String) {
        switch value {
        case .bool(let b): text += b ? "boolean:true" : "boolean:false"
        case .int(let i): appendNumber(Double(i), to: &text)
        case .double(let d): appendNumber(d, to: &text)
        case .string(let s):
            text += "string:"
            text += s
        case .null, .array, .object:
            preconditionFailure("only primitives are hashed")
        }
    }

    private static func appendNumber(_ d: Double, to text: inout String) {
        text += "number:"
        let hex = String(d.bitPattern, radix: 16)
        if hex.utf8.count < 16 { text += String(repeating: "0", count: 16 - hex.utf8.count) }
        text += hex
    }
}
