// ServerValues -- resolving `{".sv": …}` placeholders in written data (Protocol.md#Server-values).
//
// Two operations exist:
//   {".sv": "timestamp"}              → the server's time in milliseconds since the epoch (an integer);
//   {".sv": {"increment": n}}         → the number currently stored at that location plus n. Integer + integer
//                                      stays an integer unless it overflows Int64 (then a double); any double
//                                      makes a double; an absent or non-numeric current value counts as absent,
//                                      so the result is n.
// A placeholder is a leaf: its object may carry `.priority` beside `.sv` (the result is then written in export
// form, `{".value": v, ".priority": p}`), nothing else. Placeholders may also stand for a priority
// (`{".priority": {".sv": "timestamp"}}`); an increment there adds to the current priority.

extension Key {
    /// The `.sv` operation producing the server time.
    static let timestampOperation = "timestamp"
    /// The `.sv` operation adding to the current number.
    static let incrementOperation = "increment"
}

/// Resolution of server-value placeholders against the current tree.
public enum ServerValues {
    /// Replaces every `{".sv": …}` placeholder in `json` with its value.
    ///
    /// - Parameters:
    ///   - json: The written value (plain or export form).
    ///   - path: Where it will be written; may end in `.priority`.
    ///   - root: The whole current tree (the state the write applies to); increments read from it.
    ///   - now: The server time in milliseconds since the epoch.
    /// - Returns: `json` with placeholders replaced (the same value when there were none).
    /// - Throws: `DataError.invalidServerValue` for an unknown or malformed placeholder, `.tooDeep` for data
    ///   nested beyond the depth limit; the error names the placeholder's location.
    public static func resolve(_ json: JSONValue, at path: Path, in root: Node, now: Int64) throws(DataError)
        -> JSONValue
    {
        guard containsPlaceholder(json) else { return json }
        var resolver = Resolver(root: root, now: now, location: path.segments)
        return try resolver.resolve(json)
    }

    /// Whether `json` contains any `.sv` key at any depth.
    public static func containsPlaceholder(_ json: JSONValue) -> Bool {
        switch json {
        case .null, .bool, .int, .double, .string: return false
        case .array(let items): return items.contains(where: containsPlaceholder)
        case .object(let members):
            return members.contains { sameKey($0.key, Key.serverValue) || containsPlaceholder($0.value) }
        }
    }

    private struct Resolver {
        let root: Node
        let now: Int64
        var location: [String]

        mutating func resolve(_ json: JSONValue) throws(DataError) -> JSONValue {
            switch json {
            case .null, .bool, .int, .double, .string:
                return json
            case .array(let items):
                var out: [JSONValue] = []
                out.reserveCapacity(items.count)
                for (i, item) in items.enumerated() {
                    out.append(try descend(String(i), item))
                }
                return .array(out)
            case .object(let members):
                if members.contains(where: { sameKey($0.key, Key.serverValue) }) {
                    return try placeholder(members)
                }
                var out: [JSONMember] = []
                out.reserveCapacity(members.count)
                for member in members {
                    if sameKey(member.key, Key.value) {
                        // `.value` is the node itself, not a child location.
                        out.append(JSONMember(member.key, try resolve(member.value)))
                    } else {
                        out.append(JSONMember(member.key, try descend(member.key, member.value)))
                    }
                }
                return .object(out)
            }
        }

        private mutating func descend(_ key: String, _ json: JSONValue) throws(DataError) -> JSONValue {
            location.append(key)
            defer { location.removeLast() }
            guard location.count <= Path.maxDepth else { throw DataError(.tooDeep, at: Path(segments: location)) }
            return try resolve(json)
        }

        /// Resolves an object holding `.sv` (and optionally `.priority`).
        private mutating func placeholder(_ members: [JSONMember]) throws(DataError) -> JSONValue {
            var operation: JSONValue?
            var priority: JSONValue?
            for member in members {
                if sameKey(member.key, Key.serverValue) {
                    operation = member.value
                } else if sameKey(member.key, Key.priority) {
                    priority = try descend(member.key, member.value)
                } else {
                    throw DataError(.invalidServerValue, at: Path(segments: location))
                }
            }
            let value = try evaluate(operation ?? .null)
            guard let priority else { return value }
            return .object([JSONMember(Key.value, value), JSONMember(Key.priority, priority)])
        }

        private func evaluate(_ operation: JSONValue) throws(DataError) -> JSONValue {
            switch operation {
            case .string(let name) where sameKey(name, Key.timestampOperation):
                return .int(now)
            case .object(let members):
                guard members.count == 1, sameKey(members[0].key, Key.incrementOperation) else { break }
                switch members[0].value {
                case .int, .double: return ServerValues.increment(current(), by: members[0].value)
                default: break
                }
            default: break
            }
            throw DataError(.invalidServerValue, at: Path(segments: location))
        }

        /// The value stored at the current location (a priority when the location ends in `.priority`).
        private func current() -> JSONValue? {
            if let last = location.last, sameKey(last, Key.priority) {
                return root.node(at: Path(segments: Array(location.dropLast()))).priority
            }
            return root.node(at: Path(segments: location)).value
        }
    }

    /// `current + delta` with Firebase's increment rules (see the file header).
    static func increment(_ current: JSONValue?, by delta: JSONValue) -> JSONValue {
        switch (current, delta) {
        case (.int(let a)?, .int(let b)):
            let (sum, overflow) = a.addingReportingOverflow(b)
            return overflow ? .double(Double(a) + Double(b)) : .int(sum)
        case (.int(let a)?, .double(let b)): return .double(Double(a) + b)
        case (.double(let a)?, .int(let b)): return .double(a + Double(b))
        case (.double(let a)?, .double(let b)): return .double(a + b)
        default: return delta
        }
    }
}
