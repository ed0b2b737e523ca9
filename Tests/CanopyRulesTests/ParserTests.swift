// ParserTests -- lexing and parsing: precedence, locations, refusals and hostile input.
import Testing

@testable import CanopyRules

@Suite struct ParserTests {
    /// Renders a syntax tree with explicit parentheses to check grouping.
    static func render(_ node: Syntax) -> String {
        switch node.kind {
        case .boolean(let b): "\(b)"
        case .number(let n): n == n.rounded() ? "\(Int(n))" : "\(n)"
        case .string(let s): "'\(s)'"
        case .null: "null"
        case .regex(let p, let f): "/\(p)/\(f)"
        case .array(let items): "[" + items.map(render).joined(separator: ",") + "]"
        case .identifier(let name): name
        case .member(let t, let name): "\(render(t)).\(name)"
        case .index(let t, let k): "\(render(t))[\(render(k))]"
        case .call(let t, let args): "\(render(t))(" + args.map(render).joined(separator: ",") + ")"
        case .not(let x): "(!\(render(x)))"
        case .negate(let x): "(-\(render(x)))"
        case .binary(let op, let l, let r): "(\(render(l)) \(op.rawValue) \(render(r)))"
        case .and(let l, let r): "(\(render(l)) && \(render(r)))"
        case .or(let l, let r): "(\(render(l)) || \(render(r)))"
        case .conditional(let c, let a, let b): "(\(render(c)) ? \(render(a)) : \(render(b)))"
        }
    }

    static let grouping: [(String, String)] = [
        ("1 + 2 * 3", "(1 + (2 * 3))"),
        ("1 - 2 - 3", "((1 - 2) - 3)"),
        ("a || b && c", "(a || (b && c))"),
        ("a == b && c != d", "((a == b) && (c != d))"),
        ("a < b == c >= d", "((a < b) == (c >= d))"),
        ("!a.b()", "(!a.b())"),
        ("-a * b", "((-a) * b)"),
        ("a ? b : c ? d : e", "(a ? b : (c ? d : e))"),
        ("a === b", "(a == b)"),
        ("a !== b", "(a != b)"),
        ("x.y['z'](1, 'w')", "x.y['z'](1,'w')"),
        ("a / b / c", "((a / b) / c)"),
        ("s.matches(/a\\/b/i)", "s.matches(/a\\/b/i)"),
        ("(a + b) * c", "((a + b) * c)"),
        ("r.hasChildren(['a', 'b'])", "r.hasChildren(['a','b'])"),
        (".5 + 1e3 == 1000.5", "((0.5 + 1000) == 1000.5)"),
    ]

    @Test(arguments: grouping)
    func parsesWithJavaScriptPrecedence(_ source: String, _ expected: String) throws {
        #expect(Self.render(try Parser.parse(source)) == expected)
    }

    static let refused: [String] = [
        "", "a = 1", "a; b", "a += 1", "a++", "--a", "a ** 2", "a & b", "a | b", "a ^ b", "~a", "{a: 1}",
        "`t`", "a ? b", "a.", "a[", "f(", "f(a,)", "'open", "1.2.3", "1e", "0x1f", "a b", "new X()", "@",
        "'\\1'", "a >> 1", "a <= = b",
    ]

    @Test(arguments: refused)
    func refusesNonRulesSyntax(_ source: String) {
        #expect(throws: ExpressionError.self) { _ = try Parser.parse(source) }
    }

    @Test func errorLocationIsLineAndColumn() {
        do {
            _ = try Parser.parse("auth != null &&\n  root = 1")
            Issue.record("expected a parse error")
        } catch {
            #expect(error.location == SourceLocation(line: 2, column: 8))
        }
    }

    @Test func deepNestingIsRefusedNotCrashed() {
        let deep = String(repeating: "(", count: 10_000) + "true" + String(repeating: ")", count: 10_000)
        #expect(throws: ExpressionError.self) { _ = try Parser.parse(deep) }
        let nots = String(repeating: "!", count: 10_000) + "true"
        #expect(throws: ExpressionError.self) { _ = try Parser.parse(nots) }
    }

    @Test func longestOperatorChainsCompileAndEvaluate() throws {
        let n = Parser.maxOperators
        let ands = Array(repeating: "auth == null", count: n + 1).joined(separator: " && ")
        #expect(throws: ExpressionError.self) { _ = try Parser.parse(ands) }
        let sum = Array(repeating: "1", count: n).joined(separator: " + ") + " == \(n)"
        let expression = try TypeChecker.compile(sum, captures: [], kind: .read)
        let evaluator = Evaluator(
            auth: .null, oldRoot: JSONRuleData.empty, newRoot: nil, path: [], captures: [], now: 0, query: .plain)
        #expect(try evaluator.isGranted(expression).get())
        let chain = Array(repeating: "auth == null", count: n / 2).joined(separator: " && ")
        #expect(try evaluator.isGranted(try TypeChecker.compile(chain, captures: [], kind: .read)).get())
    }

    @Test func hugeExpressionIsRefused() {
        let long = Array(repeating: "true", count: 20_000).joined(separator: " && ")
        #expect(throws: ExpressionError.self) { _ = try Parser.parse(long) }
    }

    @Test func randomInputNeverTraps() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abc$._()[]'\"/\\!=<>&|?:+-*%,0123456789 \n".unicodeScalars)
        for _ in 0..<3000 {
            var s = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0..<40, using: &generator) {
                s.append(alphabet.randomElement(using: &generator)!)
            }
            _ = try? TypeChecker.compile(String(s), captures: ["$a"], kind: .write)
        }
    }
}
