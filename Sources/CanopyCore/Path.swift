// Path -- a location in the data tree, as a list of keys.

/// A location in the data tree: the keys from the root down, e.g. `/rooms/a` = `["rooms", "a"]`.
///
/// Equality and hashing use the exact UTF-8 bytes of the segments, never Swift's canonical-equivalence `String`
/// comparison: `"é"` and `"e\u{301}"` are different keys in Firebase.
public struct Path: Sendable, CustomStringConvertible {
    /// The keys from the root down. Empty for the root.
    public let segments: [String]

    /// The deepest path Firebase accepts, in segments.
    public static let maxDepth = 32

    /// The root of the tree.
    public static let root = Path(segments: [])

    /// Creates a path from segments that are already known to be valid. Nothing is checked.
    public init(segments: [String]) {
        self.segments = segments
    }

    /// Parses a path string such as `/rooms/a`, `rooms/a/` or `/`.
    ///
    /// The string is split on `/` and empty segments are dropped, so clients that send paths with or without a
    /// leading slash (Android omits it) reach the same location. The string must not be percent-encoded.
    /// - Parameters:
    ///   - string: The path text.
    ///   - allowPriorityLeaf: Accept `.priority` as the last segment (a priority-only write).
    /// - Throws: `DataError` `.invalidKey` (located at the valid prefix) for a bad segment, `.invalidPath` for more
    ///   than 32 segments.
    /// The non-empty runs of `string` between slashes, unchecked (a rules `child()` argument, a client's path).
    /// Split on the UTF-8 bytes: splitting the `String` joins a "/" and a combining accent after it into one
    /// `Character`, and would read `a/\u{301}b` as one key.
    public static func segments(splitting string: String) -> [String] {
        var string = string
        return string.withUTF8 { bytes in
            var out: [String] = []
            var start = 0
            for i in 0...bytes.count where i == bytes.count || bytes[i] == UInt8(ascii: "/") {
                defer { start = i + 1 }
                if i > start { out.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)) }
            }
            return out
        }
    }

    public init(parsing string: String, allowPriorityLeaf: Bool = false) throws(DataError) {
        var segments: [String] = []
        var tooDeep = false
        let split: Void? = string.utf8.withContiguousStorageIfAvailable { bytes in
            // One pass over the bytes: a key is each run between slashes (the generic `split` costs several times
            // more, and every wire message and REST request parses its path here).
            var start = 0
            for i in 0...bytes.count where i == bytes.count || bytes[i] == UInt8(ascii: "/") {
                defer { start = i + 1 }
                guard i > start else { continue }
                guard segments.count < Path.maxDepth else {
                    tooDeep = true
                    return
                }
                segments.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self))
            }
        }
        if split == nil {
            for part in string.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
                guard segments.count < Path.maxDepth else {
                    tooDeep = true
                    break
                }
                segments.append(String(Substring(part)))
            }
        }
        if tooDeep { throw DataError(.invalidPath, atText: Path(segments: segments).description + "/…") }
        for (i, key) in segments.enumerated() where !Key.isValid(key) {
            if allowPriorityLeaf && i == segments.count - 1 && sameKey(key, Key.priority) { continue }
            throw DataError(.invalidKey, at: Path(segments: Array(segments[..<i])))
        }
        self.segments = segments
    }

    /// Whether this is the root.
    public var isRoot: Bool { segments.isEmpty }
    /// The number of segments.
    public var count: Int { segments.count }
    /// The first key, or nil at the root.
    public var firstKey: String? { segments.first }
    /// The last key, or nil at the root.
    public var lastKey: String? { segments.last }
    /// Whether the last segment is `.priority` (a priority-only location).
    public var isPriorityPath: Bool { segments.last.map { sameKey($0, Key.priority) } ?? false }

    /// The parent location, or nil at the root.
    public var parent: Path? {
        segments.isEmpty ? nil : Path(segments: Array(segments.dropLast()))
    }

    /// This path without its first segment (the root stays the root).
    public var droppingFirst: Path { Path(segments: Array(segments.dropFirst())) }

    /// The location of child `key` below this one. `key` is not checked.
    public func child(_ key: String) -> Path {
        Path(segments: segments + [key])
    }

    /// The location of `path` taken relative to this one.
    public func appending(_ path: Path) -> Path {
        Path(segments: segments + path.segments)
    }

    /// Whether `other` lies strictly below this path.
    public func isAncestor(of other: Path) -> Bool {
        other.segments.count > segments.count && isPrefix(of: other)
    }

    /// Whether `other` is this path or lies below it.
    public func isAncestorOrSelf(of other: Path) -> Bool {
        other.segments.count >= segments.count && isPrefix(of: other)
    }

    /// The path of `self` relative to `ancestor`, or nil when `ancestor` is not this path or above it.
    public func relative(to ancestor: Path) -> Path? {
        guard ancestor.isAncestorOrSelf(of: self) else { return nil }
        return Path(segments: Array(segments[ancestor.segments.count...]))
    }

    /// `/` for the root, otherwise `/a/b`.
    public var description: String {
        segments.isEmpty ? "/" : "/" + segments.joined(separator: "/")
    }

    /// The path without a leading slash (`""` for the root), the form Firebase uses inside query objects.
    public var relativeDescription: String {
        segments.joined(separator: "/")
    }

    private func isPrefix(of other: Path) -> Bool {
        for (a, b) in zip(segments, other.segments) where !sameKey(a, b) { return false }
        return true
    }
}

extension Path: Hashable {
    public static func == (a: Path, b: Path) -> Bool {
        guard a.segments.count == b.segments.count else { return false }
        for (x, y) in zip(a.segments, b.segments) where !sameKey(x, y) { return false }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(segments.count)
        for segment in segments {
            hasher.combine(segment.utf8.count)
            let hashed: Void? = segment.utf8.withContiguousStorageIfAvailable {
                hasher.combine(bytes: UnsafeRawBufferPointer($0))
            }
            if hashed == nil {
                for byte in segment.utf8 { hasher.combine(byte) }
            }
        }
    }
}

/// Whether two keys are the same key: identical UTF-8 bytes (not Swift's canonical equivalence).
///
/// Every object member lookup and path comparison comes here: native strings are compared as byte buffers (the
/// generic `UTF8View.elementsEqual` walks them through index arithmetic, several times slower).
@inline(__always)
public func sameKey(_ a: String, _ b: String) -> Bool {
    guard a.utf8.count == b.utf8.count else { return false }
    let fast: Bool?? = a.utf8.withContiguousStorageIfAvailable { x in
        b.utf8.withContiguousStorageIfAvailable { y in x.elementsEqual(y) }
    }
    if case .some(.some(let equal)) = fast { return equal }
    return a.utf8.elementsEqual(b.utf8)
}
