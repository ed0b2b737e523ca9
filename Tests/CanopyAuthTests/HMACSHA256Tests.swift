// HMACSHA256Tests -- RFC 4231 vectors and constant-time comparison.

import Testing

@testable import CanopyAuth

@Suite struct HMACSHA256Tests {
    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    @Test func rfc4231TestCase1() {
        let key = [UInt8](repeating: 0x0b, count: 20)
        let tag = HMACSHA256.authenticate(Array("Hi There".utf8), key: key)
        #expect(Self.hex(tag) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    }

    @Test func rfc4231TestCase2() {
        let tag = HMACSHA256.authenticate(Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8))
        #expect(Self.hex(tag) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func emptyInputsStillProduceATag() {
        let tag = HMACSHA256.authenticate([], key: [])
        #expect(Self.hex(tag) == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test func constantTimeEquality() {
        #expect(HMACSHA256.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!HMACSHA256.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!HMACSHA256.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(HMACSHA256.constantTimeEquals([], []))
    }
}
