// QuerySpec+REST -- reading a query from REST parameters (Protocol.md#REST-queries).
//
// Parameters (values already percent-decoded once):
//   orderBy        JSON string: "$key", "$value", "$priority" or a child path ("a/b"). Required by the others.
//   startAt, endAt, equalTo, startAfter, endBefore
//                  a JSON primitive, optionally followed by "," and a JSON string key: startAt=25,"ptero".
//                  startAfter/endBefore are exclusive; without a key part they exclude every child whose
//                  index value equals the bound (start name [MAX_NAME] / end name [MIN_NAME]).
//   limitToFirst, limitToLast
//                  a non-negative integer.
// Refused combinations: equalTo with any other bound, startAt with startAfter, endAt with endBefore, both limits.

extension QuerySpec {
    /// The REST parameters that make a request a query.
    public static let restParameterNames: Set<String> = [
        Param.orderBy, Param.startAt, Param.endAt, Param.equalTo, Param.startAfter, Param.endBefore,
        Param.limitToFirst, Param.limitToLast,
    ]

    private enum Param {
        static let orderBy = "orderBy"
        static let startAt = "startAt"
        static let endAt = "endAt"
        static let equalTo = "equalTo"
        static let startAfter = "startAfter"
        static let endBefore = "endBefore"
        static let limitToFirst = "limitToFirst"
        static let limitToLast = "limitToLast"
        static let keyIndex = "$key"
        static let valueIndex = "$value"
        static let priorityIndex = "$priority"
    }

    /// Reads a query from REST query parameters.
    ///
    /// - Parameter params: Decoded query parameters; unrelated ones (`auth`, `print`, …) are ignored.
    /// - Returns: nil when no query parameter is present, otherwise the query (which may load all data, e.g.
    ///   `orderBy` alone).
    /// - Throws: `QueryError` with the texts the real server uses where they are known.
    public static func fromREST(_ params: [String: String]) throws(QueryError) -> QuerySpec? {
        guard params.keys.contains(where: { restParameterNames.contains($0) }) else { return nil }
        guard let orderBy = params[Param.orderBy] else { throw QueryError(.orderByRequired) }
        var query = QuerySpec(index: try parseOrderBy(orderBy))

        func bound(_ name: String, defaultName: QueryName, inclusive: Bool) throws(QueryError) -> QueryBound? {
            guard let text = params[name] else { return nil }
            return try parseBound(
                text, parameter: name, index: query.index, defaultName: defaultName,
                inclusive: inclusive)
        }
        let startAt = try bound(Param.startAt, defaultName: .min, inclusive: true)
        let startAfter = try bound(Param.startAfter, defaultName: .max, inclusive: false)
        let endAt = try bound(Param.endAt, defaultName: .max, inclusive: true)
        let endBefore = try bound(Param.endBefore, defaultName: .min, inclusive: false)
        if let equal = try bound(Param.equalTo, defaultName: .min, inclusive: true) {
            for other in [Param.startAt, Param.startAfter, Param.endAt, Param.endBefore] where params[other] != nil {
                throw QueryError(.conflicting(Param.equalTo, other))
            }
            query.start = equal
            var end = equal
            if case .min = equal.name { end.name = .max }
            query.end = end
        }
        if startAt != nil && startAfter != nil { throw QueryError(.conflicting(Param.startAt, Param.startAfter)) }
        if endAt != nil && endBefore != nil { throw QueryError(.conflicting(Param.endAt, Param.endBefore)) }
        if let start = startAt ?? startAfter { query.start = start }
        if let end = endAt ?? endBefore { query.end = end }
        if query.index == .key {
            // The key index ignores names; keep them canonical so equal queries compare equal.
            query.start?.name = .min
            query.end?.name = .max
        }

        let first = try parseLimit(params[Param.limitToFirst], Param.limitToFirst)
        let last = try parseLimit(params[Param.limitToLast], Param.limitToLast)
        switch (first, last) {
        case (.some, .some): throw QueryError(.conflicting(Param.limitToFirst, Param.limitToLast))
        case (let n?, nil): query.limit = .first(n)
        case (nil, let n?): query.limit = .last(n)
        case (nil, nil): break
        }
        return query
    }

    private static func parseOrderBy(_ text: String) throws(QueryError) -> QueryIndex {
        guard case .string(let name)? = try? JSONValue.parse(text) else { throw QueryError(.orderByInvalid) }
        if sameKey(name, Param.keyIndex) { return .key }
        if sameKey(name, Param.valueIndex) { return .value }
        if sameKey(name, Param.priorityIndex) { return .priority }
        guard let path = try? Path(parsing: name), !path.isRoot else { throw QueryError(.orderByInvalid) }
        return .child(path)
    }

    private static func parseLimit(_ text: String?, _ parameter: String) throws(QueryError) -> Int? {
        guard let text else { return nil }
        guard let value = try? JSONValue.parse(text), let n = value.int64Value, n >= 0, n <= Int64(Int32.max) else {
            throw QueryError(.invalidLimit(parameter: parameter))
        }
        return Int(n)
    }

    /// Parses `value` or `value,"key"` and checks it against the index.
    private static func parseBound(
        _ text: String, parameter: String, index: QueryIndex, defaultName: QueryName, inclusive: Bool
    ) throws(QueryError) -> QueryBound {
        let (value, key) = try splitBound(text, parameter: parameter)
        switch value {
        case .array, .object: throw QueryError(.invalidBound(parameter: parameter))
        default: break
        }
        switch index {
        case .key:
            guard key == nil, case .string(let s) = value, Key.isValid(s) else { throw QueryError(.invalidKeyBound) }
            return QueryBound(value: value, name: defaultName, isInclusive: inclusive)
        case .priority:
            if case .bool = value { throw QueryError(.invalidPriorityBound) }
        case .value, .child:
            break
        }
        if let key, !Key.isValid(key) { throw QueryError(.invalidKeyBound) }
        return QueryBound(value: value, name: key.map(QueryName.name) ?? defaultName, isInclusive: inclusive)
    }

    /// Splits `value[,"key"]`: the value is the longest JSON token before a top-level comma.
    private static func splitBound(_ text: String, parameter: String) throws(QueryError) -> (JSONValue, String?) {
        let bytes = Array(text.utf8)
        var comma: Int?
        if bytes.first == UInt8(ascii: "\"") {
            // Skip the string token (escapes included), then expect the end or a comma.
            var i = 1
            while i < bytes.count && bytes[i] != UInt8(ascii: "\"") {
                i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1
            }
            if i + 1 < bytes.count { comma = i + 1 }
        } else {
            comma = bytes.firstIndex(of: UInt8(ascii: ","))
        }
        let invalid = QueryError(.invalidBound(parameter: parameter))
        guard let comma else {
            guard let value = try? JSONValue.parse(bytes) else { throw invalid }
            return (value, nil)
        }
        guard bytes[comma] == UInt8(ascii: ","),
            let value = try? JSONValue.parse(bytes[..<comma]),
            case .string(let key)? = try? JSONValue.parse(bytes[(comma + 1)...])
        else { throw invalid }
        return (value, key)
    }
}
