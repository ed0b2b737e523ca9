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
        let text = TokenMinter.mintHS256(claims: claims, secret: F.secret, issuedAt: F.now, ttlSeconds: 8 * 3600)
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
        let text = TokenMinter.mintHS256(claims: [:], secret: F.secret, issuedAt: F.now, ttlSeconds: 60, kid: "v1")
        let header = try #require(Base64.decode(text.split(separator: ".")[0], url: true))
        #expect(try JSONValue.parse(header) == ["alg": "HS256", "typ": "JWT", "kid": "v1"])
        #expect(!text.contains("="))
    }

    @Test func mintedTokenExpires() {
        let text = TokenMinter.mintHS256(claims: [:], secret: F.secret, issuedAt: F.now - 7200, ttlSeconds: 3600)
        #expect(jwtErrorKind { try F.verifier([.hmac(secret: F.secret)]).verify(text) } == .expired)
    }

    @Test(arguments: [JWTAlgorithm.rs256, .es256])
    func packageMintWithKeyPairs(algorithm: JWTAlgorithm) throws {
        let key = algorithm == .rs256 ? F.rsa : F.ec
        let text = TokenMinter.mint(claims: ["admin": true], key: key, issuedAt: F.now, ttlSeconds: 60)
        let verifier = F.verifier(try VerificationKey.publicKeys(pem: key.publicKeyPEM))
        #expect(try verifier.verify(text).isAdmin)
    }
}
