// RandomTokenTests -- session ids and long-poll tokens: length, alphabet, and no visible skew.

import Testing

@testable import CanopyServer

@Suite struct RandomTokenTests {
    @Test func tokensAreLettersAndDigitsSpreadEvenly() {
        let alphabet = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        var counts: [Character: Int] = [:]
        var seen = Set<String>()
        for _ in 0..<2_000 {
            let token = RandomToken.alphanumeric(32)
            #expect(token.count == 32)
            #expect(token.allSatisfy(alphabet.contains))
            seen.insert(token)
            for character in token { counts[character, default: 0] += 1 }
        }
        #expect(seen.count == 2_000)
        #expect(RandomToken.alphanumeric(7).count == 7)
        // 64,000 characters over 62 symbols: about 1,032 each. A stuck or skewed digit would leave some symbol far
        // off; a uniform source stays within ±25 % with overwhelming probability (σ ≈ 32).
        #expect(counts.count == 62)
        for (character, count) in counts {
            #expect((774...1290).contains(count), "\(character) drawn \(count) times")
        }
    }
}
