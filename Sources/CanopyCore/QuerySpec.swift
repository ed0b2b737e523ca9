// QuerySpec -- an ordered, optionally ranged and limited view of a node's children (Protocol.md#Query-objects).
//
// A query orders the children of one location by an index (priority, key, value, or a child path), keeps the
// children between a start and an end bound, then keeps the first or last n of those. Bounds are "posts":
// an index value plus a key name that breaks ties between equal index values. With the key index the bound
// value is itself the key and the name part is unused. Names may be the sentinels `[MIN_NAME]`/`[MAX_NAME]` or
// arbitrary strings (clients send synthetic successor/predecessor keys that are not valid stored keys).
// Evaluation lives in `QuerySpec+Evaluate.swift`; the two encodings in `QuerySpec+REST.swift` and
// `QuerySpec+Wire.swift`.

/// The ordering of a query.
public enum QueryIndex: Sendable, Hashable {
    /// By priority (the default): no priority, then numbers, then strings.
    case priority
    /// By key (`compareKeys`).
    case key
    /// By the children's own values.
    case value
    /// By the value at a path below each child (`orderByChild("a/b")`).
    case child(Path)
}

/// The key part of a query bound.
public enum QueryName: Sendable, Hashable {
    /// Before every key (`[MIN_NAME]`).
    case min
    /// After every key (`[MAX_NAME]`).
    case max
    /// A key name; need not be a valid stored key.
    case name(String)

    /// The wire text of the sentinel before every key.
    public static let minText = "[MIN_NAME]"
    /// The wire text of the sentinel after every key.
    public static let maxText = "[MAX_NAME]"

    /// Reads a wire name, recognising the sentinels.
    public init(wire text: String) {
        if sameKey(text, QueryName.minText) {
            self = .min
        } else if sameKey(text, QueryName.maxText) {
            self = .max
        } else {
            self = .name(text)
        }
    }

    /// The wire text (sentinels spelled out).
    public var wireText: String {
        switch self {
        case .min: QueryName.minText
        case .max: QueryName.maxText
        case .name(let s): s
        }
    }

    /// Compares this name with a stored key: sentinels sort outside all keys, names in key order.
    public func compare(toKey key: String) -> Int {
        switch self {
        case .min: -1
        case .max: 1
        case .name(let s): compareKeys(s, key)
        }
    }

    public static func == (a: QueryName, b: QueryName) -> Bool {
        switch (a, b) {
        case (.min, .min), (.max, .max): true
        case (.name(let x), .name(let y)): sameKey(x, y)
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .min: hasher.combine(0 as UInt8)
        case .max: hasher.combine(1 as UInt8)
        case .name(let s):
            hasher.combine(2 as UInt8)
            hasher.combine(JSONValue.string(s))
        }
    }
}

/// One end of a query range.
public struct QueryBound: Sendable, Hashable {
    /// The index value: null, a boolean, a number or a string. With the key index: the key (a string).
    public var value: JSONValue
    /// The tie-breaking key name among children whose index value equals `value`. Unused with the key index.
    public var name: QueryName
    /// Whether a child exactly at the bound is kept.
    public var isInclusive: Bool

    /// Creates a bound.
    public init(value: JSONValue, name: QueryName, isInclusive: Bool = true) {
        self.value = value
        self.name = name
        self.isInclusive = isInclusive
    }
}

/// How many children a query keeps after the range filter.
public enum QueryLimit: Sendable, Hashable {
    /// The first n in index order (`limitToFirst`, wire `vf: "l"`).
    case first(Int)
    /// The last n in index order (`limitToLast`, wire `vf: "r"`).
    case last(Int)

    /// The count.
    public var count: Int {
        switch self {
        case .first(let n), .last(let n): n
        }
    }
}

/// A query over the children of one location.
///
/// ```swift
/// // orderByChild("height").startAt(3).limitToFirst(2)
/// let q = QuerySpec(index: .child(Path(segments: ["height"])),
///                   start: QueryBound(value: .int(3), name: .min), limit: .first(2))
/// let result = q.window(of: dinosaurs)   // the matching children, no top-level priority
/// ```
public struct QuerySpec: Sendable, Hashable {
    /// The ordering.
    public var index: QueryIndex
    /// The lower bound, or nil for "from the first child".
    public var start: QueryBound?
    /// The upper bound, or nil for "to the last child".
    public var end: QueryBound?
    /// The limit, or nil for all children in range.
    public var limit: QueryLimit?

    /// Creates a query.
    public init(
        index: QueryIndex = .priority, start: QueryBound? = nil, end: QueryBound? = nil,
        limit: QueryLimit? = nil
    ) {
        self.index = index
        self.start = start
        self.end = end
        self.limit = limit
    }

    /// The default query: the whole location, priority order.
    public static let `default` = QuerySpec()

    /// Whether the query returns the whole location (no range, no limit); such queries are sent as plain listens.
    public var loadsAllData: Bool { start == nil && end == nil && limit == nil }
}
