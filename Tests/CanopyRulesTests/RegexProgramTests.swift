// RegexProgramTests -- the Firebase regex dialect: what compiles, what matches, and bounded cost.
import Testing

@testable import CanopyRules

@Suite struct RegexProgramTests {
    static let matching: [(pattern: String, flags: String, text: String, matches: Bool)] = [
        ("a", "", "ba", true),
        ("^a", "", "ba", false),
        ("a$", "", "ba", true),
        ("^ba$", "", "ba", true),
        ("^ba$", "", "bab", false),
        ("^$", "", "", true),
        ("^$", "", "x", false),
        ("^a*$", "", "", true),
        ("^a+$", "", "", false),
        ("colou?r", "", "my color", true),
        ("^\\d{3}-\\d{4}$", "", "555-1234", true),
        ("^\\d{3}-\\d{4}$", "", "555-12345", false),
        ("^\\w+$", "", "user_1", true),
        ("^\\w+$", "", "user-1", false),
        ("\\s", "", "a b", true),
        ("^\\S+$", "", "a b", false),
        ("^\\D+$", "", "abc", true),
        ("^\\W$", "", "-", true),
        ("^[abc]+$", "", "cab", true),
        ("^[a-z0-9_]+$", "", "ab_9", true),
        ("^[^0-9]+$", "", "abc", true),
        ("^[^0-9]+$", "", "ab1", false),
        ("^[\\d.]+$", "", "1.5", true),
        ("^[a-]+$", "", "a-a", true),
        ("^(foo|bar)+$", "", "foobarfoo", true),
        ("^(foo|bar)+$", "", "foobaz", false),
        ("^a{2,}$", "", "aaa", true),
        ("^a{2,3}$", "", "aaaa", false),
        ("^a{2}$", "", "aa", true),
        ("^.$", "", "\n", false),
        ("^.$", "", "é", true),
        ("^hello$", "i", "HeLLo", true),
        ("^[a-z]+$", "i", "ABC", true),
        ("^[A-Z]+$", "i", "abc", true),
        ("^[^a-z]$", "i", "A", false),
        ("^[^a-z]$", "i", "1", true),
        ("\\.", "", "a.b", true),
        ("\\.", "", "ab", false),
        ("\\/", "", "a/b", true),
        ("^a.*?b$", "", "axxb", true),
        ("^(a*)*$", "", "aaaa", true),
        ("^(a|aa)*c$", "", String(repeating: "a", count: 5000), false),
    ]

    @Test(arguments: matching)
    func matches(pattern: String, flags: String, text: String, matches: Bool) throws {
        let program = try RegexProgram.compile(pattern: pattern, flags: flags)
        #expect(program.matches(text) == matches)
    }

    static let invalid: [(String, String)] = [
        ("x", "g"), ("x", "ig"), ("x", "ii"), ("x", "m"),
        ("(^foo$|bar)", ""), ("a^b", ""), ("a$b", ""), ("^(foo|)$", ""), ("a|", ""), ("|a", ""), ("()", ""),
        ("(a", ""), ("a)", ""), ("[a", ""), ("[]", ""), ("*a", ""), ("a**", ""), ("a{2", ""), ("a{3,2}", ""),
        ("a{1001}", ""), ("\\b", ""), ("\\1", ""), ("(?:a)", ""), ("[z-a]", ""), ("a{,2}", ""),
    ]

    @Test(arguments: invalid)
    func refuses(pattern: String, flags: String) {
        #expect(throws: RegexError.self) { _ = try RegexProgram.compile(pattern: pattern, flags: flags) }
    }

    @Test func programSizeIsBounded() {
        #expect(throws: RegexError.self) {
            _ = try RegexProgram.compile(pattern: "(a{1000}){1000}", flags: "")
        }
    }

    @Test func randomPatternsNeverTrap() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ab^$.*+?()[]{}|\\-,0123dswDSW".unicodeScalars)
        for _ in 0..<3000 {
            var s = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0..<16, using: &generator) {
                s.append(alphabet.randomElement(using: &generator)!)
            }
            if let program = try? RegexProgram.compile(pattern: String(s), flags: "i") {
                _ = program.matches("ab12 -AB{}")
            }
        }
    }

    @Test func escapedDollarIsALiteral() throws {
        let program = try RegexProgram.compile(pattern: "a\\$", flags: "")
        #expect(program.matches("xa$y"))
        #expect(!program.matches("xa"))
    }
}
