// QuerySpec+Wire -- the WebSocket query object `q` (Protocol.md#Query-objects).
//
// Fields (any order; unknown fields ignored):
//   i    index: ".value", ".key", ".priority" or a child path ("a/b"); absent = priority
//   sp   start index value (may be null); sn start name (absent = [MIN_NAME]); sin inclusive (absent = true)
//   ep   end index value;   en end name (absent = [MAX_NAME]);              ein inclusive (absent = true)
//   l    limit; vf "l" (first) or "r" (last); without vf the limit counts from the left when a start is set
// With the key index the bound value is the key and the name is unused. Names and key-index values are
// arbitrary strings: clients send synthetic neighbours (`"abc-"`, 786-char predecessors) and the sentinels.

extension QuerySpec {
    private enum Field {
        static let index = "i"
        static let startValue = "sp"
        static let startName = "sn"
        static let startInclusive = "sin"
        static let endValue = "ep"
        static let endName = "en"
        static let endInclusive = "ein"
        static let limit = "l"
        static let viewFrom = "vf"
        static let viewFromLeft = "l"
        static let viewFromRight = "r"
        static let valueIndex = ".value"
        static let keyIndex = ".key"
        static let priorityIndex = ".priority"
    }

    /// Reads a WebSocket query object.
    ///
    /// - Throws: `QueryError.invalidWireField` naming the first field with a wrong type or value.
    public static func fromWire(_ q: JSONValue) throws(QueryError) -> QuerySpec {
        guard case .object = q else { throw QueryError(.invalidWireField("q")) }
        var query = QuerySpec()
        if let i = q[Field.index] {
            guard case .string(let name) = i else { throw QueryError(.invalidWireField(Field.index)) }
            if sameKey(name, Field.valueIndex) {
                query.index = .value
            } else if sameKey(name, Field.keyIndex) {
                query.index = .key
            } else if sameKey(name, Field.priorityIndex) {
                query.index = .priority
            } else {
                guard let path = try? Path(parsing: name), !path.isRoot else {
                    throw QueryError(.invalidWireField(Field.index))
                }
                query.index = .child(path)
            }
        }
        query.start = try wireBound(q, Field.startValue, Field.startName, Field.startInclusive, .min, query.index)
        query.end = try wireBound(q, Field.endValue, Field.endName, Field.endInclusive, .max, query.index)
        if let l = q[Field.limit] {
            guard let n = l.int64Value, n >= 0, n <= Int64(Int32.max) else {
                throw QueryError(.invalidWireField(Field.limit))
            }
            let fromLeft: Bool
            switch q[Field.viewFrom] {
            case nil: fromLeft = query.start != nil
            case .string(let vf)? where sameKey(vf, Field.viewFromLeft): fromLeft = true
            case .string(let vf)? where sameKey(vf, Field.viewFromRight): fromLeft = false
            default: throw QueryError(.invalidWireField(Field.viewFrom))
            }
            query.limit = fromLeft ? .first(Int(n)) : .last(Int(n))
        }
        return query
    }

    private static func wireBound(
        _ q: JSONValue, _ valueField: String, _ nameField: String, _ inclusiveField: String,
        _ defaultName: QueryName, _ index: QueryIndex
    ) throws(QueryError) -> QueryBound? {
        guard let value = q[valueField] else { return nil }
        switch value {
        case .array, .object: throw QueryError(.invalidWireField(valueField))
        case .string: break
        default:
            if case .key = index { throw QueryError(.invalidWireField(valueField)) }
        }
        var name = defaultName
        if let n = q[nameField], index != .key {
            guard case .string(let text) = n else { throw QueryError(.invalidWireField(nameField)) }
            name = QueryName(wire: text)
        }
        var inclusive = true
        if let flag = q[inclusiveField] {
            guard case .bool(let b) = flag else { throw QueryError(.invalidWireField(inclusiveField)) }
            inclusive = b
        }
        return QueryBound(value: value, name: name, isInclusive: inclusive)
    }

    /// The query as a WebSocket `q` object, in the field order the JS SDK uses (round-trips through `fromWire`).
    public func wireObject() -> JSONValue {
        var members: [JSONMember] = []
        if let start {
            members.append(JSONMember(Field.startValue, start.value))
            if index != .key, start.name != .min {
                members.append(JSONMember(Field.startName, .string(start.name.wireText)))
            }
            members.append(JSONMember(Field.startInclusive, .bool(start.isInclusive)))
        }
        if let end {
            members.append(JSONMember(Field.endValue, end.value))
            if index != .key, end.name != .max { members.append(JSONMember(Field.endName, .string(end.name.wireText))) }
            members.append(JSONMember(Field.endInclusive, .bool(end.isInclusive)))
        }
        if let limit {
            members.append(JSONMember(Field.limit, .int(Int64(limit.count))))
            switch limit {
            case .first: members.append(JSONMember(Field.viewFrom, .string(Field.viewFromLeft)))
            case .last: members.append(JSONMember(Field.viewFrom, .string(Field.viewFromRight)))
            }
        }
        switch index {
        case .priority: break
        case .key: members.append(JSONMember(Field.index, .string(Field.keyIndex)))
        case .value: members.append(JSONMember(Field.index, .string(Field.valueIndex)))
        case .child(let path): members.append(JSONMember(Field.index, .string(path.relativeDescription)))
        }
        return .object(members)
    }
}
