// RulesCommandLine -- `canopy rules eval|check|lint` as pure functions (issue 3 item 7; keep stable).
//
// The CLI layer parses argv and the JSON options and calls these; they return the exact text to
// print on stdout (one JSON line for eval/check) and the exit code.
import CanopyCore

/// The rules commands' behaviour, independent of argument parsing.
public enum RulesCommandLine {
    /// `canopy rules eval`: evaluates `expr` as a `.read` rule at the root would be.
    ///
    /// Prints `{"valid":bool,"error":string|null,"value":bool|null}`: `valid` is false when the
    /// expression would be refused at load time; a run-time failure is valid with an error and a
    /// null value. Always exits 0 (the CLI returns this text with status 0).
    /// - Parameters:
    ///   - auth: the `auth` variable exactly as rules see it (`.null` = signed out).
    ///   - data: the whole database (plain or export format).
    ///   - vars: captured wildcards, `"$name"` to value; only these names are in scope.
    ///   - query: the `query` object (`orderByChild`, `limitToFirst`, ...); nil for a plain read.
    ///   - now: fixes `now` (ms); nil uses the system clock.
    public static func eval(
        expr: String, auth: JSONValue, data: JSONValue, vars: [String: String], query: JSONValue?, now: Int64?
    ) -> String {
        let names = vars.keys.sorted().map { $0.hasPrefix("$") ? $0 : "$" + $0 }
        let values = vars.keys.sorted().map { vars[$0] ?? "" }
        let expression: Expression
        do {
            expression = try TypeChecker.compile(expr, captures: names, kind: .read)
        } catch {
            return line(["valid": false, "error": .string("\(error.location): \(error.reason)"), "value": nil])
        }
        let evaluator = Evaluator(
            auth: auth, oldRoot: JSONRuleData(data), newRoot: nil, path: [], captures: values,
            now: now ?? SystemClock().nowMilliseconds(), query: query.map(RuleQuery.init(json:)) ?? .plain)
        switch evaluator.isGranted(expression) {
        case .success(let b): return line(["valid": true, "error": nil, "value": .bool(b)])
        case .failure(let error): return line(["valid": true, "error": .string(error.message), "value": nil])
        }
    }

    /// `canopy rules check`: decides one operation against a rules file and a database.
    ///
    /// Prints `{"allowed":bool,"reason":"..."}` with status 0; an invalid rules file prints
    /// `{"allowed":false,"error":"..."}` with status 1; a bad `op`, path or update value prints the
    /// same shape with status 64 (usage).
    /// - Parameters:
    ///   - op: `read`, `write` or `update`.
    ///   - path: the location, `/a/b`.
    ///   - value: for `write` the new value (nil = delete); for `update` the patch object relative to
    ///     `path`. `{".sv": "timestamp"}` resolves to `now`.
    public static func check(
        rulesSource: String, data: JSONValue, auth: JSONValue, op: String, path: String, value: JSONValue?,
        query: JSONValue?, now: Int64?
    ) -> (output: String, exitCode: Int32) {
        let rules: CompiledRules
        do {
            rules = try CompiledRules.compile(source: rulesSource)
        } catch {
            return (line(["allowed": false, "error": .string(error.userMessage)]), 1)
        }
        func usage(_ message: String) -> (output: String, exitCode: Int32) {
            (line(["allowed": false, "error": .string(message)]), 64)
        }
        guard let segments = splitPath(path) else { return usage("invalid path: \(path)") }
        let now = now ?? SystemClock().nowMilliseconds()
        let old = JSONRuleData(data)
        let decision: RuleDecision
        switch op {
        case "read":
            decision = rules.canRead(
                path: segments, root: old, auth: auth, now: now, query: query.map(RuleQuery.init(json:)))
        case "write":
            let newData = setting(data, at: segments[...], to: resolveServerValues(value ?? .null, now: now))
            decision = rules.canWrite(path: segments, oldRoot: old, newRoot: JSONRuleData(newData), auth: auth, now: now)
        case "update":
            guard case .object(let members)? = value else { return usage("--value for update must be an object") }
            var newData = data
            var children: [[String]] = []
            for member in members {
                guard let child = splitPath(member.key), !child.isEmpty else {
                    return usage("invalid update key: \(member.key)")
                }
                children.append(child)
                newData = setting(newData, at: (segments + child)[...], to: resolveServerValues(member.value, now: now))
            }
            for (i, a) in children.enumerated() {
                for b in children[(i + 1)...] where a.starts(with: b) || b.starts(with: a) {
                    return usage("update paths overlap: /\(a.joined(separator: "/")) and /\(b.joined(separator: "/"))")
                }
            }
            decision = rules.canUpdate(
                basePath: segments, childPaths: children, oldRoot: old, newRoot: JSONRuleData(newData), auth: auth,
                now: now)
        default:
            return usage("unknown operation '\(op)' (use read, write or update)")
        }
        return (line(["allowed": .bool(decision.allowed), "reason": .string(decision.reason)]), 0)
    }

    /// `canopy rules lint FILE`: one line per problem (`FILE:/rules/a/.read:1:5: reason`); status 1 if any.
    public static func lint(source: String, fileName: String) -> (output: String, exitCode: Int32) {
        let problems = CompiledRules.lint(source: source)
        if problems.isEmpty { return ("", 0) }
        return (problems.map { "\(fileName):\($0.error.userMessage)\n" }.joined(), 1)
    }

    private static func line(_ members: KeyValuePairs<String, JSONValue>) -> String {
        JSONValue.object(members.map { JSONMember($0.key, $0.value) }).serialized()
    }

    /// `/a/b/` → `["a", "b"]`; nil if a key could never be stored.
    static func splitPath(_ path: String) -> [String]? {
        let keys = Path.segments(splitting: path)
        for key in keys where RulesLoader.keyProblem(key) != nil || key.hasPrefix("$") { return nil }
        return keys
    }

    /// Replaces every `{".sv": "timestamp"}` with `now`.
    static func resolveServerValues(_ value: JSONValue, now: Int64) -> JSONValue {
        switch value {
        case .object(let members):
            if members.count == 1, members[0].key == ".sv", case .string("timestamp") = members[0].value {
                return .int(now)
            }
            return .object(members.map { JSONMember($0.key, resolveServerValues($0.value, now: now)) })
        case .array(let items): return .array(items.map { resolveServerValues($0, now: now) })
        default: return value
        }
    }

    /// `root` with the subtree at `path` replaced by `value` (nulls are pruned when the tree is read).
    static func setting(_ root: JSONValue, at path: ArraySlice<String>, to value: JSONValue) -> JSONValue {
        guard let key = path.first else { return value }
        var members: [JSONMember] = []
        if case .object(let existing) = root, !existing.contains(where: { $0.key == ".value" }) {
            members = existing
        }
        if let i = members.firstIndex(where: { JSONKey($0.key) == JSONKey(key) }) {
            members[i].value = setting(members[i].value, at: path.dropFirst(), to: value)
        } else {
            members.append(JSONMember(key, setting(.null, at: path.dropFirst(), to: value)))
        }
        return .object(members)
    }
}
