// RulesCommandLineTests -- the stable output of `canopy rules eval|check|lint` (issue 3 item 7).
import CanopyCore
import Testing

@testable import CanopyRules

@Suite struct RulesCommandLineTests {
    @Test func evalPrintsValueLine() {
        let out = RulesCommandLine.eval(
            expr: "auth.uid == $uid && root.child('a').val() == 1", auth: ["uid": "u1"], data: ["a": 1],
            vars: ["$uid": "u1"], query: nil, now: 5)
        #expect(out == #"{"valid":true,"error":null,"value":true}"#)
    }

    @Test func evalReportsInvalidExpression() throws {
        let out = RulesCommandLine.eval(expr: "newData.exists()", auth: .null, data: .null, vars: [:], query: nil, now: 0)
        let result = try JSONValue.parse(out)
        #expect(result["valid"] == false)
        #expect(result["value"] == .null)
        #expect(result["error"]?.stringValue?.contains("1:1") == true)
    }

    @Test func evalReportsRuntimeError() throws {
        let out = RulesCommandLine.eval(
            expr: "auth.uid.contains('a')", auth: .null, data: .null, vars: [:], query: nil, now: 0)
        let result = try JSONValue.parse(out)
        #expect(result["valid"] == true)
        #expect(result["value"] == .null)
        #expect(result["error"]?.stringValue?.isEmpty == false)
    }

    @Test func evalAcceptsExportDataQueryAndNow() {
        let out = RulesCommandLine.eval(
            expr: "root.child('p').getPriority() == 2 && query.limitToFirst == 3 && now == 9",
            auth: .null, data: ["p": [".value": "x", ".priority": 2]], vars: [:], query: ["limitToFirst": 3],
            now: 9)
        #expect(out == #"{"valid":true,"error":null,"value":true}"#)
    }

    @Test func evalPassesAuthThroughUnchanged() {
        let out = RulesCommandLine.eval(
            expr: "auth.admin == true && auth.token == null", auth: ["admin": true], data: .null, vars: [:],
            query: nil, now: 0)
        #expect(out == #"{"valid":true,"error":null,"value":true}"#)
    }

    static let rules = #"{"rules": {"a": {".read": "auth != null", ".write": "auth.uid == 'u1'"}}}"#

    @Test func checkPrintsDecision() throws {
        let (out, status) = RulesCommandLine.check(
            rulesSource: Self.rules, data: .null, auth: ["uid": "u1"], op: "read", path: "/a/b", value: nil,
            query: nil, now: 0)
        #expect(status == 0)
        #expect(out == #"{"allowed":true,"reason":"granted by .read at /a"}"#)
        let (denied, _) = RulesCommandLine.check(
            rulesSource: Self.rules, data: .null, auth: .null, op: "read", path: "/a", value: nil, query: nil, now: 0)
        #expect(denied == #"{"allowed":false,"reason":"no .read rule granted access to /a"}"#)
    }

    @Test func checkInvalidRulesExitsOne() throws {
        let (out, status) = RulesCommandLine.check(
            rulesSource: #"{"rules": {".read": "skies"}}"#, data: .null, auth: .null, op: "read", path: "/",
            value: nil, query: nil, now: 0)
        #expect(status == 1)
        let result = try JSONValue.parse(out)
        #expect(result["allowed"] == false)
        #expect(result["error"]?.stringValue?.contains("/rules/.read:1:1") == true)
    }

    @Test(arguments: [
        ("delete", "/a", JSONValue.null), ("write", "/a/$x", JSONValue.null), ("update", "/a", JSONValue.int(1)),
        ("update", "/", ["a": 1, "a/b": 2] as JSONValue),
    ])
    func checkUsageErrors(op: String, path: String, value: JSONValue) {
        let (out, status) = RulesCommandLine.check(
            rulesSource: Self.rules, data: .null, auth: .null, op: op, path: path, value: value, query: nil, now: 0)
        #expect(status == 64, "\(out)")
    }

    @Test func checkUpdateResolvesServerTimestamps() throws {
        let rules = #"{"rules": {"t": {".write": true, ".validate": "newData.val() == now"}}}"#
        let (out, _) = RulesCommandLine.check(
            rulesSource: rules, data: .null, auth: .null, op: "update", path: "/", value: ["t": [".sv": "timestamp"]],
            query: nil, now: 77)
        #expect(try JSONValue.parse(out)["allowed"] == true)
    }

    @Test func lintListsProblemsWithPaths() {
        let (out, status) = RulesCommandLine.lint(
            source: #"{"rules": {"a": {".read": "7"}, ".bogus": 1}}"#, fileName: "x.rules.json")
        #expect(status == 1)
        #expect(out.split(separator: "\n").count == 2)
        #expect(out.hasPrefix("x.rules.json:/rules/a/.read:1:1: "))
        let (clean, ok) = RulesCommandLine.lint(source: #"{"rules": {}}"#, fileName: "y")
        #expect(ok == 0 && clean.isEmpty)
    }
}
