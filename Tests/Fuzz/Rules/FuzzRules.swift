// FuzzRules -- libFuzzer target for the security rules: lexer, parser, type checker, loader and evaluator
// (Tests/fuzz.sh).
//
// The first byte chooses the mode. Even: the rest is a whole rules document (`.rules` JSON dialect), compiled
// and linted. Odd: the rest is one expression, placed as `.read`, `.write` and `.validate` under
// `/users/$uid` and compiled. Whatever compiles is evaluated against a fixture tree: reads of a few paths
// (plain and with a query), a set and an update. Invariants: nothing crashes; `compile` succeeds exactly when
// `lint` reports nothing; evaluating twice gives the same decision.

@testable import CanopyRules
import CanopyCore
import FuzzSupport

@main enum Main { static func main() { runFuzzer(fuzz) } }

private let fixture = JSONRuleData(fixtureRoot.json(export: true))
private let changed: JSONRuleData = {
    guard let age = try? Node.from(json: .int(37)) else { fatalError("no leaf") }
    let root = fixtureRoot.setting(age, at: Path(segments: ["users", "ada", "age"]))
    return JSONRuleData(root.json(export: true))
}()
private let auth: JSONValue = ["uid": "ada", "token": ["admin": true, "email": "ada@example.com"]]
private let paths: [[String]] = [[], ["users"], ["users", "ada"], ["users", "ada", "age"], ["scores", "a"]]
private let query = RuleQuery(orderByChild: "age", startAt: .int(1), limitToFirst: 2)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = inputBytes(data, size)
    guard let first = input.first, let text = String(validating: input.dropFirst(), as: UTF8.self) else { return 0 }
    let rules: CompiledRules
    if first & 1 == 0 {
        let compiled = try? CompiledRules.compile(source: text)
        let problems = CompiledRules.lint(source: text)
        guard (compiled == nil) == !problems.isEmpty else {
            fatalError("compile and lint disagree: \(problems.count) problems, compiled: \(compiled != nil)")
        }
        guard let compiled else { return 0 }
        rules = compiled
    } else {
        for kind in [RuleKind.read, .write, .validate] {
            _ = try? TypeChecker.compile(text, captures: ["$uid"], kind: kind)
        }
        let rule = JSONValue.string(text)
        let document: JSONValue = [
            "rules": ["users": ["$uid": [".read": rule, ".write": rule, ".validate": rule, ".indexOn": ["age"]]]]
        ]
        guard let compiled = try? CompiledRules.compile(json: document) else { return 0 }
        rules = compiled
    }
    evaluate(rules)
    return 0
}

private func evaluate(_ rules: CompiledRules) {
    for path in paths {
        let read = rules.canRead(path: path, root: fixture, auth: auth, now: 1_700_000_000_000, query: nil)
        let again = rules.canRead(path: path, root: fixture, auth: auth, now: 1_700_000_000_000, query: nil)
        guard read == again else { fatalError("the same read decided twice differs at \(path)") }
        _ = rules.canRead(path: path, root: fixture, auth: .null, now: 0, query: query)
        _ = rules.indexOn(at: path)
    }
    _ = rules.canWrite(path: ["users", "ada", "age"], oldRoot: fixture, newRoot: changed, auth: auth, now: 1)
    _ = rules.canUpdate(
        basePath: ["users", "ada"], childPaths: [["age"], ["name"]], oldRoot: fixture, newRoot: changed, auth: auth,
        now: 1)
}
