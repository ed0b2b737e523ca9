// JSONValue+Literals -- write JSON values as Swift literals: `["title": "hi", "n": 3, "tags": [1, nil]]`.

extension JSONValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .int(value) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// Builds an object keeping the literal's member order.
    ///
    /// A repeated key (exact UTF-8 bytes) is a programmer error and traps.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var seen = Set<JSONKey>()
        var members: [JSONMember] = []
        members.reserveCapacity(elements.count)
        for (key, value) in elements {
            precondition(seen.insert(JSONKey(key)).inserted, "duplicate key in JSON object literal")
            members.append(JSONMember(key, value))
        }
        self = .object(members)
    }
}
