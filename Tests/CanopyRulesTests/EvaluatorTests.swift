// EvaluatorTests -- the expression spec (Resources/expressions.json): load-time validity and run-time values.
import CanopyCore
import Testing

@testable import CanopyRules

@Suite struct EvaluatorTests {

    /// `child()` splits its argument at every "/", even one followed by a combining accent (which a `String`
    /// split joins with the slash into one `Character`, reading `allowed/\u{301}b` as one key).
    @Test func childSplitsAtASlashBeforeACombiningAccent() throws {
        let expression = try TypeChecker.compile("root.child('allowed/' + $k).exists()", captures: ["$k"], kind: .read)
        let data = JSONRuleData(["allowed": ["\u{301}b": true]])
        let evaluator = Evaluator(
            auth: .null, oldRoot: data, newRoot: nil, path: ["items", "\u{301}b"], captures: ["\u{301}b"], now: 0,
            query: .plain)
        guard case .success(let granted) = evaluator.isGranted(expression) else {
            Issue.record("failed at run time")
            return
        }
        #expect(granted)
    }
    static let cases = SpecResources.cases("expressions")

    @Test(arguments: cases)
    func expressionCase(_ spec: SpecCase) throws {
        let expr = try #require(spec["expr"]?.stringValue)
        let kind = RuleKind(rawValue: "." + (spec["kind"]?.stringValue ?? "read")) ?? .read
        var names: [String] = []
        var values: [String] = []
        for member in spec["vars"]?.members ?? [] {
            names.append(member.key)
            values.append(member.value.stringValue ?? "")
        }
        let expected = try #require(spec["expect"])
        let expression: Expression
        do {
            expression = try TypeChecker.compile(expr, captures: names, kind: kind)
        } catch {
            #expect(expected == "invalid", "refused: \(error.location): \(error.reason)")
            return
        }
        #expect(expected != "invalid", "accepted but should be refused")
        let data = JSONRuleData(spec["data"] ?? .null)
        let newData = JSONRuleData(spec["newData"] ?? .null)
        let path = (spec["path"]?.stringValue ?? "").split(separator: "/").map(String.init)
        let evaluator = Evaluator(
            auth: spec["auth"] ?? .null, oldRoot: data, newRoot: kind == .read ? nil : newData, path: path,
            captures: values, now: spec["now"]?.int64Value ?? 0,
            query: spec["query"].map(RuleQuery.init(json:)) ?? .plain)
        switch evaluator.isGranted(expression) {
        case .success(let value):
            #expect(expected == .bool(value), "evaluated to \(value)")
        case .failure(let error):
            #expect(expected == "error", "failed at run time: \(error.message)")
        }
    }

    @Test func runtimeErrorNamesTheLocation() throws {
        let expression = try TypeChecker.compile("true && auth.contains('a')", captures: [], kind: .read)
        let evaluator = Evaluator(
            auth: .null, oldRoot: JSONRuleData.empty, newRoot: nil, path: [], captures: [], now: 0, query: .plain)
        guard case .failure(let error) = evaluator.isGranted(expression) else {
            Issue.record("expected a run-time failure")
            return
        }
        #expect(error.location == SourceLocation(line: 1, column: 22))
        #expect(error.reason.contains("null"))
    }
}
