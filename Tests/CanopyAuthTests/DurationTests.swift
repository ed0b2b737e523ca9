// DurationTests -- the command-line duration syntax.

import Testing

@testable import CanopyAuth

@Suite struct DurationTests {
    @Test(
        arguments: [
            ("8h", 28_800), ("30m", 1_800), ("45s", 45), ("2d", 172_800), ("3600", 3_600), ("0", 0),
            ("1h30m", 5_400), ("1d2h3m4s", 93_784), ("007s", 7),
        ] as [(String, Int64)])
    func accepted(text: String, seconds: Int64) {
        #expect(parseDuration(text) == seconds)
    }

    @Test(arguments: [
        "", "h", "-5", "+5", "1.5h", "8 h", "8H", "8x", "30m1h", "1h1h", "8h ", "1s2",
        "99999999999999999999", "9999999999999999d",
    ])
    func refused(text: String) {
        #expect(parseDuration(text) == nil)
    }
}
