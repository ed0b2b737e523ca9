// CompiledRulesReachTests -- whether any .write could grant a write before its data is known: "no" only if certain.
import CanopyCore
import Testing

@testable import CanopyRules

@Suite struct CompiledRulesReachTests {
    struct Case: Sendable, CustomStringConvertible {
        var rules: String
        var path: String
        var reach: CompiledRules.WriteReach
        var auth: JSONValue
        var couldGrant: Bool
        var description: String { "\(rules) \(path) \(reach) as \(auth)" }
    }

    static let ownUser = #"{"rules": {"users": {"$uid": {".write": "auth != null && auth.uid === $uid"}}}}"#
    static let cases: [Case] = [
        // Nothing grants anyone: certain.
        Case(rules: #"{"rules": {}}"#, path: "a", reach: .path, auth: .null, couldGrant: false),
        Case(rules: #"{"rules": {".write": false}}"#, path: "a/b", reach: .descendants, auth: .null, couldGrant: false),
        Case(rules: #"{"rules": {".write": true}}"#, path: "a", reach: .path, auth: .null, couldGrant: true),
        // Decided by auth and the captured key alone.
        Case(rules: ownUser, path: "users/u1", reach: .path, auth: .null, couldGrant: false),
        Case(rules: ownUser, path: "users/u1", reach: .path, auth: ["uid": "u2"], couldGrant: false),
        Case(rules: ownUser, path: "users/u1", reach: .path, auth: ["uid": "u1"], couldGrant: true),
        Case(rules: ownUser, path: "users/u1/x", reach: .path, auth: ["uid": "u1"], couldGrant: true),
        // A set at /users is not granted by rules below it; a push or an update may land below.
        Case(rules: ownUser, path: "users", reach: .path, auth: ["uid": "u1"], couldGrant: false),
        Case(rules: ownUser, path: "users", reach: .child, auth: ["uid": "u1"], couldGrant: true),
        Case(rules: ownUser, path: "users", reach: .descendants, auth: ["uid": "u1"], couldGrant: true),
        Case(rules: ownUser, path: "", reach: .descendants, auth: .null, couldGrant: false),
        // Anything that reads the data, the new data or the time might grant later: never refused early.
        Case(
            rules: #"{"rules": {".write": "!data.exists()"}}"#, path: "a", reach: .path, auth: .null, couldGrant: true),
        Case(
            rules: #"{"rules": {".write": "newData.val() == 1"}}"#, path: "a", reach: .path, auth: .null,
            couldGrant: true),
        Case(rules: #"{"rules": {".write": "now > 5"}}"#, path: "a", reach: .path, auth: .null, couldGrant: true),
        Case(
            rules: #"{"rules": {".write": "root.child('open').val() == true || auth != null"}}"#, path: "a",
            reach: .path, auth: .null, couldGrant: true),
        // ... unless a part that reads only auth settles it.
        Case(
            rules: #"{"rules": {".write": "auth != null && root.child('admins').child(auth.uid).exists()"}}"#,
            path: "a", reach: .path, auth: .null, couldGrant: false),
        Case(
            rules: #"{"rules": {".write": "auth.token.admin === true ? data.exists() : false"}}"#, path: "a",
            reach: .path, auth: ["token": ["admin": false]], couldGrant: false),
        // An error never grants (a method on null).
        Case(
            rules: #"{"rules": {".write": "auth.token.email.endsWith('@x.org')"}}"#, path: "a", reach: .path,
            auth: .null, couldGrant: false),
        // A wildcard below the path captures a key not known yet.
        Case(
            rules: #"{"rules": {"rooms": {"$room": {".write": "$room === 'lobby'"}}}}"#, path: "rooms",
            reach: .child, auth: .null, couldGrant: true),
        Case(
            rules: #"{"rules": {"rooms": {"$room": {".write": "$room === 'lobby'"}}}}"#, path: "rooms/hall",
            reach: .path, auth: .null, couldGrant: false),
    ]

    @Test(arguments: cases)
    func couldGrant(_ spec: Case) throws {
        let rules = try CompiledRules.compile(source: spec.rules)
        let path = spec.path.split(separator: "/").map(String.init)
        #expect(rules.couldGrantWrite(at: path, reach: spec.reach, auth: spec.auth) == spec.couldGrant)
    }

    static func setting(_ value: JSONValue, at path: ArraySlice<String>, in tree: JSONValue) -> JSONValue {
        guard let first = path.first else { return value }
        var members: [JSONMember] = []
        if case .object(let existing) = tree { members = existing.filter { $0.key != first } }
        let child = tree[first] ?? .null
        members.append(JSONMember(first, setting(value, at: path.dropFirst(), in: child)))
        return .object(members)
    }

    /// Whenever the early answer is "no", the full decision is "no" for every value and data tried.
    @Test(arguments: cases.filter { !$0.couldGrant && $0.reach == .path })
    func anEarlyNoIsNeverContradicted(_ spec: Case) throws {
        let rules = try CompiledRules.compile(source: spec.rules)
        let path = spec.path.split(separator: "/").map(String.init)
        let values: [JSONValue] = [.null, 1, "x", true, ["a": 1]]
        let trees: [JSONValue] = [.null, ["open": true, "admins": ["u1": true]]]
        for tree in trees {
            for value in values {
                let old = JSONRuleData(tree)
                let new = JSONRuleData(Self.setting(value, at: path[...], in: tree))
                let decision = rules.canWrite(path: path, oldRoot: old, newRoot: new, auth: spec.auth, now: 10)
                #expect(!decision.allowed, "\(spec) with \(value) over \(tree)")
            }
        }
    }
}
