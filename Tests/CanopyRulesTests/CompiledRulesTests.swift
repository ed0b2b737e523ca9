// CompiledRulesTests -- the access spec (Resources/access.json), rule documents, indexOn and decisions.
import CanopyCore
import Testing

@testable import CanopyRules

@Suite struct CompiledRulesTests {
    static let scenarios = SpecResources.cases("access")

    @Test(arguments: scenarios)
    func accessScenario(_ spec: SpecCase) throws {
        let rules = try #require(spec["rules"]).serialized()
        let data = spec["data"] ?? .null
        let checks = spec["checks"]?.arrayValue ?? []
        #expect(!checks.isEmpty)
        for check in checks {
            let op = try #require(check["op"]?.stringValue)
            let path = try #require(check["path"]?.stringValue)
            let (output, status) = RulesCommandLine.check(
                rulesSource: rules, data: data, auth: check["auth"] ?? .null, op: op, path: path,
                value: check["value"], query: check["query"], now: check["now"]?.int64Value ?? 1000)
            #expect(status == 0, "\(op) \(path): \(output)")
            let result = try JSONValue.parse(output)
            let expected: Bool = try #require(check["allowed"]?.boolValue as Bool?)
            #expect(result["allowed"]?.boolValue == expected, "\(op) \(path) as \(check["auth"] ?? .null): \(output)")
            if let reason = check["reason"]?.stringValue {
                #expect(result["reason"]?.stringValue?.contains(reason) == true, "\(output)")
            }
        }
    }

    @Test func readDecisionNamesTheGrantingRule() throws {
        let rules = try CompiledRules.compile(
            source: #"{"rules": {"users": {"$uid": {".read": "auth.uid == $uid"}}}}"#)
        let granted = rules.canRead(
            path: ["users", "u1"], root: JSONRuleData.empty, auth: ["uid": "u1"], now: 0, query: nil)
        #expect(granted == RuleDecision(allowed: true, reason: "granted by .read at /users/$uid"))
        let denied = rules.canRead(
            path: ["users", "u2"], root: JSONRuleData.empty, auth: ["uid": "u1"], now: 0, query: nil)
        #expect(!denied.allowed)
        #expect(denied.reason.contains("/users/u2"))
    }

    @Test func writeDecisionNamesTheFailingValidate() throws {
        let rules = try CompiledRules.compile(
            source: #"{"rules": {".write": true, "n": {".validate": "newData.isNumber()"}}}"#)
        let decision = rules.canWrite(
            path: ["n"], oldRoot: JSONRuleData.empty, newRoot: JSONRuleData(["n": "x"]), auth: .null, now: 0)
        #expect(!decision.allowed)
        #expect(decision.reason.contains(".validate at /n"))
    }

    @Test func indexOnIsDeclaredPerNode() throws {
        let rules = try CompiledRules.compile(
            source: #"{"rules": {"a": {".indexOn": "score", "$x": {".indexOn": ["b", ".value"]}}}}"#)
        #expect(rules.indexOn(at: ["a"]) == ["score"])
        #expect(rules.indexOn(at: ["a", "any"]) == ["b", ".value"])
        #expect(rules.indexOn(at: ["b"]) == [])
        #expect(rules.indexOn(at: []) == [])
    }

    @Test func sourceJSONIsKeptAndCommentsAreAllowed() throws {
        let rules = try CompiledRules.compile(source: "// top\n{\"rules\": {/* c */ \".read\": true}}")
        #expect(rules.sourceJSON == ["rules": [".read": true]])
    }

    static let invalidDocuments: [(String, String)] = [
        (#"{"rules": {".read": 7}}"#, "/rules/.read"),
        (#"{"rules": {".woops": true}}"#, "/rules/.woops"),
        (#"{"rules": {"a": true}}"#, "/rules/a"),
        (#"{"rules": {"$a": {}, "$b": {}}}"#, "/rules/$b"),
        (#"{"rules": {"$a": {"$a": {}}}}"#, "/rules/$a/$a"),
        (#"{"rules": {".indexOn": [1]}}"#, "/rules/.indexOn"),
        (#"{"rules": {}, "other": {}}"#, "/"),
        (#"{"notrules": {}}"#, "/"),
        (#"[]"#, "/"),
        (#"{"rules": {"a": {".read": "newData.exists()"}}}"#, "/rules/a/.read"),
        (#"{"rules": {"a": {".write": "$b == 'x'"}}}"#, "/rules/a/.write"),
        (#"{"rules": {"a": {".read": true,}}}"#, "/"),
        (#"{"rules": {"a.b": {}}}"#, "/rules/a.b"),
    ]

    @Test(arguments: invalidDocuments)
    func invalidDocumentIsRefusedWithItsPath(_ source: String, _ path: String) {
        #expect {
            _ = try CompiledRules.compile(source: source)
        } throws: { error in
            (error as? RulesError)?.path == path
        }
    }

    @Test func expressionErrorsCarryLineAndColumn() {
        do {
            _ = try CompiledRules.compile(source: #"{"rules": {"x": {".read": "auth != null && skies"}}}"#)
            Issue.record("expected a RulesError")
        } catch {
            #expect(error.path == "/rules/x/.read")
            #expect(error.location == SourceLocation(line: 1, column: 17))
            #expect(error.code == "invalid_rules")
            #expect(error.userMessage == "/rules/x/.read:1:17: unknown variable 'skies'")
        }
    }

    @Test func lintReportsEveryProblem() {
        let problems = CompiledRules.lint(
            source: #"{"rules": {"a": {".read": "7"}, "b": {".write": "skies"}, ".x": true}}"#)
        #expect(problems.map(\.error.path) == ["/rules/a/.read", "/rules/b/.write", "/rules/.x"])
        #expect(CompiledRules.lint(source: #"{"rules": {".read": true}}"#).isEmpty)
    }

    @Test func oversizedSourceIsRefused() {
        let big = "{\"rules\": {\".read\": true}}" + String(repeating: " ", count: CompiledRules.maxSourceBytes)
        #expect(throws: RulesError.self) { _ = try CompiledRules.compile(source: big) }
    }
}

@Suite struct RulesSourceLocationTests {
    @Test(arguments: [
        // An expression that ends too soon: at the closing quote, where the operand should be.
        ("{\"rules\": {\".read\": \"auth ==\"}}", 1, 29),
        // A structural error: at the key of the member.
        ("{\n \"rules\": {\n  \"a\": {\"b\": 3}}}", 3, 9),
        ("/* c */ {\"rules\": {\".foo\": true}}", 1, 20),
        // After an escape the column is the escape's first character.
        ("{\"rules\": {\".read\": \"x\\\"y\"}}", 1, 23),
        ("[1]", 1, 1),
        ("{\"rules\": {\n", 2, 1),
        // A literal ends where a comment begins: the map must not read the comment as more of the document.
        ("{\"rules\": {\".read\": false// x\n, \".foo\": true}}", 2, 3),
    ])
    func aCompileErrorNamesItsPlaceInTheText(source: String, line: Int, column: Int) {
        #expect(throws: (any Error).self) { try CompiledRules.compile(source: source) }
        do {
            _ = try CompiledRules.compile(source: source)
        } catch {
            #expect(error.sourceLocation == SourceLocation(line: line, column: column), "\(error.userMessage)")
        }
    }
}

@Suite struct RulesSourceMapTermination {
    /// Found by the Rules fuzzer (corpus e101d49aaf4a180c): a comment after a literal that the source map read as
    /// `[ … }` made it loop forever, growing its tables until memory ran out (45 s, then out of memory, on the
    /// code before the fix). Any text must map in time proportional to its length.
    @Test func aCommentAfterALiteralFullOfBracketsEnds() {
        let source =
            (
                "// 0anopy default\u{18}ru\u{0}L\u{0}\u{0}\u{0}r writes.\n{\n  \"chipyrite\": false//\"chip" +
                "yrite\": false//String().toLo)?auth.iri().towerCase()? 7 : t*rusString().toLo)? 7 : t*rusS" +
                "tring().toLower?ase()? 7ring().toLower?ase(-? 8 : t* 7 : t*rusString().toLowe(g().toLowerC" +
                "ase()? )? 7 : t*rusString().toLo)? 7 : String(). ru\u{0}L\u{0}\u{0}\u{0}rionc(cionssnncent" +
                ", pendingCo~\u{0}\u{0}\u{0}n;tent,wnssnncenta45<45, pdndf.\u{b}ex\".validate\":[[ wrquery." +
                "li, pdndf.\u{b}ex\".validate\"[ w:[rquery.limitToFirst--ad\": \"uu!\ttoLower?ase()pyrite\"" +
                ": false// ii---------/--------.chip[[[(cfyrite\": falns(se// i}\n}\n")
        #expect(throws: RulesError.self) { try CompiledRules.compile(source: source) }
    }
}
