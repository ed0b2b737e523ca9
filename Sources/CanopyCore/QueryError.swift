// QueryError -- why a REST query string or a WebSocket query object was refused.

/// A malformed or contradictory query. Maps to HTTP 400 (REST) or a `failure`-style status (WebSocket).
///
/// The texts for a missing or non-string `orderBy` and for bad `$key` bounds are the ones the real server sends.
public struct QueryError: CanopyError, Hashable {
    /// What was wrong.
    public enum Kind: Sendable, Hashable {
        /// A filter or limit was given without `orderBy`.
        case orderByRequired
        /// `orderBy` is not a JSON string naming `$key`, `$value`, `$priority` or a valid child path.
        case orderByInvalid
        /// A bound parameter (`startAt`, …) is not a JSON primitive optionally followed by `,` and a JSON string.
        case invalidBound(parameter: String)
        /// With `orderBy="$key"` a bound is not a string holding a valid key, or carries a second (key) part;
        /// or a bound's key part is not a valid key.
        case invalidKeyBound
        /// With `orderBy="$priority"` a bound is not null, a number or a string.
        case invalidPriorityBound
        /// A limit is not a non-negative integer.
        case invalidLimit(parameter: String)
        /// Two parameters that cannot be combined (`equalTo` with `startAt`, both limits, …).
        case conflicting(String, String)
        /// A field of a WebSocket query object has the wrong type or value.
        case invalidWireField(String)
    }

    /// What was wrong.
    public let kind: Kind

    /// Creates an error of `kind`.
    public init(_ kind: Kind) { self.kind = kind }

    public var code: String { "invalid_query" }

    public var userMessage: String {
        switch kind {
        case .orderByRequired: "orderBy must be defined when other query parameters are defined"
        case .orderByInvalid: "orderBy must be a valid JSON encoded path"
        case .invalidBound(let parameter):
            "\(parameter) must be a JSON string, number, boolean or null, optionally followed by a comma and a "
                + "JSON string key"
        case .invalidKeyBound: "Constraint key field must be a valid key name"
        case .invalidPriorityBound:
            "When ordering by priority, bounds must be valid priorities (null, a number, or a string)"
        case .invalidLimit(let parameter): "\(parameter) must be a non-negative integer"
        case .conflicting(let a, let b): "\(a) cannot be combined with \(b)"
        case .invalidWireField(let field): "Invalid query object: bad '\(field)' field"
        }
    }
}
