// TokenMinterTests -- minted tokens verify, carry the given claims, and get iat/exp.

import CanopyCore
import Testing

@testable import CanopyAuth

@Suite struct TokenMinterTests {
    typealias F = Fixtures

    @Test func mintThenVerifyRoundTrip() throws {
        let claims: JSONValue = [
            "userId": "901", "tierId": "55", "groups": ["42": true], "ns": "summit-2026", "iat": 1, "exp": 2,
        ]
        let text = try TokenMinter.mintHS256(claims: claims, secret: F.secret, issuedAt: F.now, ttlSeconds: 8 * 3600)
        let token = try F.verifier([.hmac(secret: F.secret)]).verify(text)
        #expect(token.algorithm == .hs256)
        #expect(token.claims["groups"] == ["42": true])
        #expect(token.claims["iat"] == .int(F.now))
        #expect(token.claims["exp"] == .int(F.now + 8 * 3600))
        #expect(token.claims.members?.map(\.key) == ["userId", "tierId", "groups", "ns", "iat", "exp"])
        #expect(token.expiresAt == (F.now + 8 * 3600) * 1000)
        #expect(token.allows(namespace: "summit-2026"))
        #expect(!token.allows(namespace: "other"))
    }

    @Test func headerNamesAlgorithmAndKid() throws {
        let text = try TokenMinter.mintHS256(claims: [:], secret: F.secret, issuedAt: F.now, ttlSeconds: 60, kid: "v1")
        let header = try #require(Base64.decode(text.split(separator: ".")[0], url: true))
        #expect(try JSONValue.parse(header) == ["alg": "HS256", "typ": "JWT", "kid": "v1"])
        #expect(!text.contains("="))
    }

    @Test func mintedTokenExpires() throws {
        let text = try TokenMinter.mintHS256(claims: [:], secret: F.secret, issuedAt: F.now - 7200, ttlSeconds: 3600)
        #expect(jwtErrorKind { try F.verifier([.hmac(secret: F.secret)]).verify(text) } == .expired)
    }

    /// Found by Tests/Fuzz/JWT: claims nested deeper than the verifier reads, or too large for a token, were
    /// minted into a token every server refuses as malformed; the minter refuses them instead.
    @Test func claimsTheVerifierWouldRefuseAreNotMinted() throws {
        var deep: JSONValue = 1
        for _ in 0..<33 { deep = ["a": deep] }  // 33 levels of objects, the claims object the outermost
        let large: JSONValue = ["blob": .string(String(repeating: "x", count: 13 * 1024))]
        // Found by the 10-million-execution run: an `nbf` that is not a number (the verifier refuses it).
        let textualNotBefore: JSONValue = ["uid": "ada", "nbf": ":2, "]
        for claims in [deep, large, textualNotBefore] {
            let error = #expect(throws: TokenMintError.self) {
                try TokenMinter.mintHS256(claims: claims, secret: F.secret, issuedAt: F.now, ttlSeconds: 60)
            }
            #expect(error?.code == "invalid_claims")
            #expect(error?.userMessage.contains("a server would refuse the token") == true)
        }
        // 32 levels are minted, and verify.
        var allowed: JSONValue = 1
        for _ in 0..<32 { allowed = ["a": allowed] }
        let text = try TokenMinter.mintHS256(claims: allowed, secret: F.secret, issuedAt: F.now, ttlSeconds: 60)
        #expect(try F.verifier([.hmac(secret: F.secret)]).verify(text).claims["a"] == allowed["a"])
        // A numeric `nbf` is minted, and verifies.
        let notBefore = try TokenMinter.mintHS256(
            claims: ["uid": "ada", "nbf": .int(F.now - 10)], secret: F.secret, issuedAt: F.now, ttlSeconds: 60)
        #expect(try F.verifier([.hmac(secret: F.secret)]).verify(notBefore).claims["nbf"] == .int(F.now - 10))
    }

    /// A lifetime putting `exp` after 9999-12-31T23:59:59Z, before the epoch, or past Int64 is refused with an
    /// error (it trapped on `iat + ttl` overflowing); the last second of 9999 is still accepted.
    @Test(arguments: [
        (F.now, Int64.max), (Int64.max, 1), (F.now, TokenMinter.latestExpiry - F.now + 1), (0, -1),
        (Int64.min, -1), (F.now, Int64.min),
    ] as [(Int64, Int64)])
    func outOfRangeLifetimesThrow(issuedAt: Int64, ttl: Int64) throws {
        let error = #expect(throws: TokenMintError.self) {
            try TokenMinter.mintHS256(claims: [:], secret: F.secret, issuedAt: issuedAt, ttlSeconds: ttl)
        }
        #expect(error == TokenMintError(issuedAt: issuedAt, ttlSeconds: ttl))
        #expect(error?.userMessage.contains("9999-12-31T23:59:59Z") == true)
        #expect(throws: TokenMintError.self) {
            try TokenMinter.mint(claims: [:], key: F.ec, issuedAt: issuedAt, ttlSeconds: ttl)
        }
    }

    @Test func lifetimeUpToTheLastSecondOf9999IsAccepted() throws {
        let ttl = TokenMinter.latestExpiry - F.now
        let text = try TokenMinter.mintHS256(claims: [:], secret: F.secret, issuedAt: F.now, ttlSeconds: ttl)
        let token = try F.verifier([.hmac(secret: F.secret)]).verify(text)
        #expect(token.claims["exp"] == .int(253_402_300_799))
        #expect(token.expiresAt == 253_402_300_799_000)
        let error = TokenMintError(issuedAt: F.now, ttlSeconds: ttl + 1)
        #expect(error.userMessage.contains("now at most \(ttl) seconds"))
    }

    @Test(arguments: [JWTAlgorithm.rs256, .es256])
    func packageMintWithKeyPairs(algorithm: JWTAlgorithm) throws {
        let key = algorithm == .rs256 ? F.rsa : F.ec
        let text = try TokenMinter.mint(claims: ["admin": true], key: key, issuedAt: F.now, ttlSeconds: 60)
        let verifier = F.verifier(try VerificationKey.publicKeys(pem: key.publicKeyPEM))
        #expect(try verifier.verify(text).isAdmin)
    }
}
