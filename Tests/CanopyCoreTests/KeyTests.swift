// KeyTests -- key validity, integer-like detection and Firebase key order.

import Testing

@testable import CanopyCore

@Suite struct KeyTests {
    @Test(arguments: [
        "a", "ab c", "é", "日本", "-", "😀", "0", "-1", "a_b-c", String(repeating: "a", count: 768),
        String(repeating: "é", count: 384),
    ])
    func validKeys(_ key: String) {
        #expect(Key.isValid(key))
    }

    @Test(arguments: [
        "", ".", "a.b", ".priority", "$x", "#", "[", "]", "a/b", "\u{0}", "a\u{1F}", "\u{7F}", "\t", "\n",
        String(repeating: "a", count: 769), String(repeating: "a", count: 767) + "é",
    ])
    func invalidKeys(_ key: String) {
        #expect(!Key.isValid(key))
    }

    @Test(arguments: [
        ("0", Int32(0)), ("-0", 0), ("007", 7), ("7", 7), ("2147483647", Int32.max), ("-2147483648", Int32.min),
        ("00000000000000000001", 1), ("0000000000002147483647", Int32.max), ("-000123", -123),
    ])
    func integerLikeKeys(_ key: String, _ expected: Int32) {
        #expect(Key.integerValue(key) == expected)
    }

    @Test(arguments: [
        "2147483648", "-2147483649", "12345678901", "-", "", "1a", "+1", " 1", "1 ", "1.0", "１", "0x1",
        "99999999999",
    ])
    func nonIntegerKeys(_ key: String) {
        #expect(Key.integerValue(key) == nil)
    }

    /// The documented order: integer-like keys numerically first (ties shorter first), then UTF-16 order.
    static let ordered = [
        "-2147483648", "-5", "0", "-0", "00", "1", "2", "7", "007", "10", "2147483647",
        "-", "-a", "2147483648", "A", "Z", "_", "a", "aa", "b", "é", "\u{D7FF}", "😀", "\u{E000}", "\u{FFFD}",
    ]

    @Test func firebaseKeyOrder() {
        var shuffled = Self.ordered
        var rng = SeededGenerator(seed: 7)
        shuffled.shuffle(using: &rng)
        #expect(shuffled.sorted { compareKeys($0, $1) < 0 } == Self.ordered)
        for (i, a) in Self.ordered.enumerated() {
            for (j, b) in Self.ordered.enumerated() {
                let c = compareKeys(a, b)
                #expect(c.signum() == (i < j ? -1 : (i == j ? 0 : 1)), "\(a) vs \(b)")
            }
        }
    }

    @Test func documentedExamples() {
        #expect(compareKeys("2", "10") < 0)
        #expect(compareKeys("10", "a") < 0)
        #expect(compareKeys("7", "007") < 0)
        #expect(compareKeys("2147483648", "3") > 0)
        #expect(compareKeys("2147483648", "a") < 0)
    }

    @Test func canonicallyEquivalentKeysAreDistinct() {
        #expect(compareKeys("é", "e\u{301}") != 0)
        #expect(compareKeys("e\u{301}", "é") == -compareKeys("é", "e\u{301}"))
        #expect(!sameKey("é", "e\u{301}"))
        #expect(sameKey("é", "é"))
    }

    @Test func astralSortsBeforeHighBMPInUTF16() {
        // Scalar order says U+FFFD < U+1F600; UTF-16 code units (D83D DE00) say the opposite.
        #expect(compareUTF16("😀", "\u{FFFD}") < 0)
        #expect(compareUTF16("\u{FFFD}", "😀") > 0)
        #expect(compareUTF16("a😀", "a\u{E000}") < 0)
        #expect(compareUTF16("😀", "\u{D7FF}") > 0)
        #expect(compareUTF16("😀", "😁") < 0)
    }

    @Test func utf16OrderMatchesReferenceOnRandomStrings() {
        let alphabet: [Character] = ["a", "b", "0", "-", "é", "\u{D7FF}", "\u{E000}", "\u{FFFD}", "😀", "𝄞", "日"]
        var rng = SeededGenerator(seed: 42)
        for _ in 0..<2000 {
            let lengths = (Int.random(in: 0...4, using: &rng), Int.random(in: 0...4, using: &rng))
            let a = String((0..<lengths.0).map { _ in alphabet.randomElement(using: &rng)! })
            let b = String((0..<lengths.1).map { _ in alphabet.randomElement(using: &rng)! })
            let expected: Int =
                Array(a.utf16).lexicographicallyPrecedes(Array(b.utf16))
                ? -1 : (Array(a.utf16) == Array(b.utf16) ? 0 : 1)
            #expect(compareUTF16(a, b).signum() == expected, "\(Array(a.unicodeScalars)) vs \(Array(b.unicodeScalars))")
        }
    }
}
