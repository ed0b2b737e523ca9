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
        if let cached = cachedHash { return cached }
        let computed = computeHash()
        cacheHash(computed)
        return computed
    }

    /// Whether `hash` is already known (reading it then costs an atomic load, not a SHA-1 per node).
    public var isHashCached: Bool { cachedHash != nil }

    /// Whether `self` and `other` hold the same data, priorities included (what equal hashes say), computed as
    /// cheaply as possible: the same instance; both hashes already cached; otherwise a structural comparison that
    /// stops at the first difference and at shared subtrees. No hash is computed: hashing a subtree costs a
    /// SHA-1 per node, a comparison only a walk (a publish compares thousands of item copies once each).
    ///
    /// Two nodes found to hold the same data have the same hash: when one of them knows it, the other keeps it too
    /// (the same immutable box, no SHA-1), at every level of the walk. A publish comparing a stored copy with the
    /// one it places (usually hashed) so compares it by its hash the next time, for free.
    public func hasSameData(as other: Node) -> Bool {
        if self === other { return true }
        if let mine = cachedHash, let theirs = other.cachedHash {
            return mine == theirs
        }
        let children = entries
        let others = other.entries
        guard Node.sameHashText(leafValue, other.leafValue), Node.sameHashText(priorityValue, other.priorityValue),
            children.count == others.count
        else { return false }
        // Two packed lists alike byte for byte need no node per leaf (`PackedChildren.sameData`).
        if let mine = children.packed, let theirs = others.packed, let same = mine.sameData(as: theirs) {
            guard same else { return false }
        } else {
            for (mine, theirs) in zip(children, others) {
                guard sameKey(mine.key, theirs.key), mine.node.hasSameData(as: theirs.node) else { return false }
            }
        }
        adoptHash(of: other)
        other.adoptHash(of: self)
        return true
    }

    /// Whether two optional primitives have the same hash text (`appendHashText`): numbers by the bits of their
    /// double (so `1` and `1.0` agree, `0.0` and `-0.0` do not), strings by their bytes.
    static func sameHashText(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (.bool(let x)?, .bool(let y)?): return x == y
        case (.string(let x)?, .string(let y)?): return sameKey(x, y)
        case (let x?, let y?):
            guard let d = x.hashDouble, let e = y.hashDouble else { return false }
            return d.bitPattern == e.bitPattern
        default: return false
        }
    }

    /// The REST ETag: `null_etag` for the empty node, otherwise `hash`.
    public var etag: String { isEmpty ? Node.nullETag : hash }

    /// The ETag of an empty location.
    public static let nullETag = "null_etag"

    private func computeHash() -> String {
        if isEmpty { return "" }
        // The hash text is built as bytes: no String bookkeeping, no array of children when none has a priority
        // (hashing is most of what a publish spends comparing and recording item versions).
        var text: [UInt8] = []
        if let p = priorityValue {
            text.append(contentsOf: "priority:".utf8)
            Node.appendHashText(of: p, to: &text)
            text.append(UInt8(ascii: ":"))
        }
        if let leaf = leafValue {
            Node.appendHashText(of: leaf, to: &text)
            return text.withUnsafeBytes { Hash.sha1Base64(bytes: $0) }
        }
        func append(_ key: String, _ child: Node) {
            let childHash = child.hash
            if childHash.isEmpty { return }
            text.append(UInt8(ascii: ":"))
            text.append(contentsOf: key.utf8)
            text.append(UInt8(ascii: ":"))
            text.append(contentsOf: childHash.utf8)
        }
        text.reserveCapacity(text.count + entries.count * 40)
        if entries.contains(where: { $0.node.priorityValue != nil }) {
            for entry in childrenInPriorityOrder() { append(entry.key, entry.node) }
        } else {
            for entry in entries { append(entry.key, entry.node) }
        }
        return text.isEmpty ? "" : text.withUnsafeBytes { Hash.sha1Base64(bytes: $0) }
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
    static func appendHashText(of value: JSONValue, to text: inout [UInt8]) {
        switch value {
        case .bool(let b): text.append(contentsOf: (b ? "boolean:true" : "boolean:false").utf8)
        case .int(let i): appendNumber(Double(i), to: &text)
        case .double(let d): appendNumber(d, to: &text)
        case .string(let s):
            text.append(contentsOf: "string:".utf8)
            text.append(contentsOf: s.utf8)
        case .null, .array, .object:
            preconditionFailure("only primitives are hashed")
        }
    }

    /// Appends `number:` and the 16 lowercase hex digits of the double's big-endian IEEE-754 bits.
    private static func appendNumber(_ d: Double, to text: inout [UInt8]) {
        text.append(contentsOf: "number:".utf8)
        let bits = d.bitPattern
        for shift in stride(from: 60, through: 0, by: -4) {
            let digit = UInt8((bits >> UInt64(shift)) & 0xF)
            text.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
        }
    }
}

extension JSONValue {
    /// The double a number is hashed as (integers converted); nil for anything else.
    fileprivate var hashDouble: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }
}
