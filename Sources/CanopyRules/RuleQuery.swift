// RuleQuery -- the `query` variable of .read rules: the parameters of the query being read.
import CanopyCore

/// The parameters of a query, as `.read` rules see them through `query.*` (Rules.md#Queries).
///
/// A plain read with no query is `RuleQuery.plain`: ordered by key, everything else unset.
public struct RuleQuery: Sendable, Equatable {
    public var orderByKey: Bool
    public var orderByPriority: Bool
    public var orderByValue: Bool
    /// The child path a query orders by, or nil.
    public var orderByChild: String?
    /// Query bounds: a string, number, boolean or null; nil when not given.
    public var startAt: JSONValue?
    public var endAt: JSONValue?
    public var equalTo: JSONValue?
    public var limitToFirst: Int?
    public var limitToLast: Int?

    public init(
        orderByKey: Bool = false, orderByPriority: Bool = false, orderByValue: Bool = false,
        orderByChild: String? = nil, startAt: JSONValue? = nil, endAt: JSONValue? = nil,
        equalTo: JSONValue? = nil, limitToFirst: Int? = nil, limitToLast: Int? = nil
    ) {
        self.orderByKey = orderByKey
        self.orderByPriority = orderByPriority
        self.orderByValue = orderByValue
        self.orderByChild = orderByChild
        self.startAt = startAt
        self.endAt = endAt
        self.equalTo = equalTo
        self.limitToFirst = limitToFirst
        self.limitToLast = limitToLast
    }

    /// What rules see for a read without query parameters.
    public static let plain = RuleQuery(orderByKey: true)

    /// Reads a `query` object as given to `canopy rules eval/check --query`
    /// (`{"orderByChild": "owner", "equalTo": "u1", "limitToFirst": 10}`); unknown members are ignored.
    /// With no `orderBy*` member the query orders by key, as Firebase does.
    public init(json: JSONValue) {
        func member(_ key: String) -> JSONValue? {
            guard case .object(let members) = json else { return nil }
            return members.first(where: { $0.key == key })?.value
        }
        func flag(_ key: String) -> Bool {
            if case .bool(true)? = member(key) { return true }
            return false
        }
        func integer(_ key: String) -> Int? {
            switch member(key) {
            case .int(let v)?: return Int(clamping: v)
            case .double(let d)? where d.rounded() == d && abs(d) < 1e15: return Int(d)
            default: return nil
            }
        }
        func bound(_ key: String) -> JSONValue? {
            switch member(key) {
            case .some(.object), .some(.array): return nil
            case let v: return v
            }
        }
        var child: String? = nil
        if case .string(let s)? = member("orderByChild") { child = s }
        self.init(
            orderByKey: flag("orderByKey"), orderByPriority: flag("orderByPriority"),
            orderByValue: flag("orderByValue"), orderByChild: child, startAt: bound("startAt"),
            endAt: bound("endAt"), equalTo: bound("equalTo"), limitToFirst: integer("limitToFirst"),
            limitToLast: integer("limitToLast"))
        if !orderByPriority && !orderByValue && orderByChild == nil { orderByKey = true }
    }
}

/// The answer to an access question, with the rule that decided it.
public struct RuleDecision: Sendable, Equatable, CustomStringConvertible {
    /// True if the operation is allowed.
    public var allowed: Bool
    /// The rule that granted (`.read at /users/$uid`) or why it was denied (`no .write rule granted at /a/b`).
    public var reason: String

    public init(allowed: Bool, reason: String) {
        self.allowed = allowed
        self.reason = reason
    }
    public var description: String { "\(allowed ? "allowed" : "denied"): \(reason)" }
}
