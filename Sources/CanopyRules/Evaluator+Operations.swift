// Evaluator+Operations -- operators, snapshot methods and string methods at run time.
import CanopyCore

extension Evaluator {
    func binary(_ op: BinaryOperator, _ a: RuleValue, _ b: RuleValue, at: SourceLocation) throws(EvaluationError)
        -> RuleValue
    {
        func fail(_ reason: String) -> EvaluationError {
            EvaluationError(location: at, reason: reason)
        }
        switch op {
        case .equal: return .bool(try RuleValue.areEqual(a, b, at: at))
        case .notEqual: return .bool(!(try RuleValue.areEqual(a, b, at: at)))
        case .add:
            switch (a, b) {
            case (.number(let x), .number(let y)): return .number(x + y)
            case (.string(let x), .string(let y)): return .string(x + y)
            case (.string(let x), .number(let y)): return .string(x + RuleValue.format(y))
            case (.number(let x), .string(let y)): return .string(RuleValue.format(x) + y)
            default: throw fail("'+' needs strings or numbers, got \(a.typeName) and \(b.typeName)")
            }
        case .subtract, .multiply, .divide, .remainder:
            guard case .number(let x) = a, case .number(let y) = b else {
                throw fail("'\(op.rawValue)' needs numbers, got \(a.typeName) and \(b.typeName)")
            }
            switch op {
            case .subtract: return .number(x - y)
            case .multiply: return .number(x * y)
            case .divide: return .number(y == 0 ? .nan : x / y)
            default: return .number(x.truncatingRemainder(dividingBy: y))
            }
        case .less, .lessEqual, .greater, .greaterEqual:
            let order: Int
            switch (a, b) {
            case (.number(let x), .number(let y)):
                if x.isNaN || y.isNaN { return .bool(false) }
                order = x < y ? -1 : (x == y ? 0 : 1)
            case (.string(let x), .string(let y)):
                order = x.utf16.lexicographicallyPrecedes(y.utf16) ? -1 : (x.utf16.elementsEqual(y.utf16) ? 0 : 1)
            default: throw fail("'\(op.rawValue)' needs two numbers or two strings, got \(a.typeName) and \(b.typeName)")
            }
            switch op {
            case .less: return .bool(order < 0)
            case .lessEqual: return .bool(order <= 0)
            case .greater: return .bool(order > 0)
            default: return .bool(order >= 0)
            }
        }
    }

    func call(_ method: Method, on receiver: RuleValue, _ arguments: [RuleValue], at: SourceLocation)
        throws(EvaluationError) -> RuleValue
    {
        func fail(_ reason: String) -> EvaluationError {
            EvaluationError(location: at, reason: reason)
        }
        func stringArgument(_ i: Int) throws(EvaluationError) -> String {
            guard case .string(let s) = arguments[i] else {
                throw fail("\(method.rawValue)() needs a string argument, got \(arguments[i].typeName)")
            }
            return s
        }
        if TypeChecker.snapshotMethods.contains(method) {
            guard case .snapshot(let snapshot) = receiver else {
                throw fail("cannot call \(method.rawValue)() on \(receiver.typeName)")
            }
            let data = snapshot.isNew ? (newRoot ?? oldRoot) : oldRoot
            switch method {
            case .val:
                if let v = data.primitive(at: snapshot.path) { return RuleValue(json: v) }
                return data.exists(at: snapshot.path) ? .opaque : .null
            case .child:
                return .snapshot(SnapshotRef(isNew: snapshot.isNew, path: snapshot.path + RuleValue.split(try stringArgument(0))))
            case .parent:
                guard !snapshot.path.isEmpty else { return .null }
                return .snapshot(SnapshotRef(isNew: snapshot.isNew, path: Array(snapshot.path.dropLast())))
            case .hasChild: return .bool(data.exists(at: snapshot.path + RuleValue.split(try stringArgument(0))))
            case .hasChildren: return .bool(data.hasChildren(at: snapshot.path))
            case .exists: return .bool(data.exists(at: snapshot.path))
            case .getPriority: return data.priority(at: snapshot.path).map(RuleValue.init(json:)) ?? .null
            case .isNumber:
                switch data.primitive(at: snapshot.path) {
                case .int?, .double?: return .bool(true)
                default: return .bool(false)
                }
            case .isString:
                if case .string? = data.primitive(at: snapshot.path) { return .bool(true) }
                return .bool(false)
            case .isBoolean:
                if case .bool? = data.primitive(at: snapshot.path) { return .bool(true) }
                return .bool(false)
            default: throw fail("unsupported method")
            }
        }
        guard case .string(let s) = receiver else {
            throw fail("cannot call \(method.rawValue)() on \(receiver.typeName)")
        }
        switch method {
        case .contains:
            let needle = try stringArgument(0)
            return .bool(RuleValue.range(of: Array(needle.utf8), in: Array(s.utf8), from: 0) != nil)
        case .beginsWith: return .bool(s.utf8.starts(with: try stringArgument(0).utf8))
        case .endsWith: return .bool(s.utf8.reversed().starts(with: try stringArgument(0).utf8.reversed()))
        case .replace: return .string(RuleValue.replacingAll(in: s, try stringArgument(0), with: try stringArgument(1)))
        case .toLowerCase: return .string(s.lowercased())
        case .toUpperCase: return .string(s.uppercased())
        default: throw fail("unsupported method")
        }
    }
}

extension RuleValue {
    init(json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .number(Double(i))
        case .double(let d): self = .number(d)
        case .string(let s): self = .string(s)
        case .object, .array: self = .json(json)
        }
    }

    /// `==` of the rules language: no coercion; values of different types are unequal.
    static func areEqual(_ a: RuleValue, _ b: RuleValue, at: SourceLocation) throws(EvaluationError) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.string(let x), .string(let y)): return sameBytes(x, y)
        case (.json(let x), .json(let y)): return x == y
        case (.snapshot, _), (_, .snapshot), (.query, _), (_, .query):
            throw EvaluationError(location: at, reason: "cannot compare \(a.typeName) with \(b.typeName)")
        default: return false
        }
    }

    /// True if the two strings have identical UTF-8 bytes (Swift `==` would equate canonical equivalents).
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a
        var b = b
        return a.withUTF8 { x in b.withUTF8 { y in x.elementsEqual(y) } }
    }

    /// Splits a `child()` path on `/`, dropping empty segments.
    static func split(_ path: String) -> [String] {
        if !path.utf8.contains(UInt8(ascii: "/")) { return path.isEmpty ? [] : [path] }
        return Path.segments(splitting: path)
    }

    static func range(of needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        if needle.isEmpty { return start }
        guard haystack.count >= needle.count else { return nil }
        var i = start
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    /// Replaces every literal occurrence, left to right (not a regex; unlike JavaScript, not just the first).
    static func replacingAll(in s: String, _ target: String, with replacement: String) -> String {
        let needle = Array(target.utf8)
        guard !needle.isEmpty else { return s }
        let haystack = Array(s.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(haystack.count)
        var i = 0
        while let found = range(of: needle, in: haystack, from: i) {
            out.append(contentsOf: haystack[i..<found])
            out.append(contentsOf: replacement.utf8)
            i = found + needle.count
        }
        out.append(contentsOf: haystack[i...])
        return String(decoding: out, as: UTF8.self)
    }

    /// A number as JavaScript's `String(n)` prints it.
    static func format(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        return JSONNumberFormat.text(d)
    }
}
