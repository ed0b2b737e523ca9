// TokenVerifierTests -- signatures, algorithm pinning and confusion, unsigned tokens, time claims, kid, aud/iss.

import CanopyCore
import Testing

@testable import CanopyAuth

@Suite struct TokenVerifierTests {
    typealias F = Fixtures

    private var rsaKeys: [VerificationKey] { try! VerificationKey.publicKeys(pem: F.rsa.publicKeyPEM) }
    private var ecKeys: [VerificationKey] { try! VerificationKey.publicKeys(pem: F.ec.publicKeyPEM) }

    /// A token living an hour from `F.now` (a lifetime the minter always accepts).
    private func mint(_ key: SigningKey, _ claims: JSONValue = F.claims, kid: String? = nil) -> String {
        try! TokenMinter.mint(claims: claims, key: key, issuedAt: F.now - 10, ttlSeconds: 3600, kid: kid)
    }

    @Test(arguments: [JWTAlgorithm.rs256, .es256])
    func goodTokenVerifies(algorithm: JWTAlgorithm) throws {
        let signer = algorithm == .rs256 ? F.rsa : F.ec
        let verifier = F.verifier(algorithm == .rs256 ? rsaKeys : ecKeys)
        let token = try verifier.verify(mint(signer))
        #expect(token.algorithm == algorithm)
        #expect(token.claims["userId"] == "901")
        #expect(token.expiresAt == (F.now - 10 + 3600) * 1000)
    }

    @Test(arguments: [JWTAlgorithm.rs256, .es256])
    func tamperedPayloadIsRefused(algorithm: JWTAlgorithm) {
        let signer = algorithm == .rs256 ? F.rsa : F.ec
        let parts = mint(signer).split(separator: ".").map(String.init)
        let forged = F.base64url(#"{"userId":"1027","tierId":"55","ns":"summit-2026"}"#)
        let token = [parts[0], forged, parts[2]].joined(separator: ".")
        #expect(jwtErrorKind { try F.verifier(rsaKeys + ecKeys).verify(token) } == .badSignature)
    }

    @Test func tokenFromAnotherKeyIsRefused() throws {
        #expect(jwtErrorKind { try F.verifier(rsaKeys).verify(mint(F.otherRSA)) } == .badSignature)
        let hs = try TokenMinter.mintHS256(
            claims: F.claims, secret: Array("another secret, 32 bytes long!!!".utf8), issuedAt: F.now,
            ttlSeconds: 60)
        #expect(jwtErrorKind { try F.verifier([.hmac(secret: F.secret)]).verify(hs) } == .badSignature)
    }

    @Test func unsignedTokenIsRefusedUnlessEmulatorMode() throws {
        // The shape of the JS SDK's mockUserToken: header {"alg":"none","type":"JWT"}, empty signature.
        let token =
            F.base64url(#"{"alg":"none","type":"JWT"}"#) + "."
            + F.base64url(#"{"sub":"u1","user_id":"u1","iat":0,"firebase":{"sign_in_provider":"custom"}}"#) + "."
        #expect(jwtErrorKind { try F.verifier([.hmac(secret: F.secret)]).verify(token) } == .algorithmNotAllowed)
        #expect(jwtErrorKind { try F.verifier([]).verify(token) } == .algorithmNotAllowed)

        let accepted = try F.verifier([], allowUnsigned: true).verify(token)
        #expect(accepted.algorithm == nil)
        #expect(accepted.uid == "u1")
        // Even in emulator mode an unsigned token may not carry a signature.
        #expect(jwtErrorKind { try F.verifier([], allowUnsigned: true).verify(token + "AAAA") } == .malformed)
    }

    @Test func hs256TokenAgainstRSAKeyIsRefused() throws {
        let token = try TokenMinter.mintHS256(claims: F.claims, secret: F.secret, issuedAt: F.now, ttlSeconds: 60)
        #expect(jwtErrorKind { try F.verifier(rsaKeys).verify(token) } == .algorithmNotAllowed)
    }

    @Test func hs256SignedWithThePublicKeyPEMIsRefused() {
        // The classic confusion attack: use the (public) PEM text as an HMAC secret.
        let pem = F.rsa.publicKeyPEM
        let token = TokenMinter.compact(header: F.header("HS256"), claims: F.claims(["exp": F.now + 60])) {
            HMACSHA256.authenticate($0, key: Array(pem.utf8))
        }
        #expect(jwtErrorKind { try F.verifier(rsaKeys).verify(token) } == .algorithmNotAllowed)
        // Mixed configuration: an unrelated HS256 secret is present, the PEM bytes still are no key.
        #expect(jwtErrorKind { try F.verifier(rsaKeys + [.hmac(secret: F.secret)]).verify(token) } == .badSignature)
    }

    @Test func rsaSignatureRelabelledAsES256IsRefused() {
        let token = TokenMinter.compact(header: F.header("ES256"), claims: F.claims) { F.rsa.sign($0) }
        #expect(jwtErrorKind { try F.verifier(rsaKeys + ecKeys).verify(token) } == .badSignature)
        #expect(jwtErrorKind { try F.verifier(rsaKeys).verify(token) } == .algorithmNotAllowed)
    }

    @Test(arguments: ["RS384", "HS512", "PS256", "NONE", "None", ""])
    func unsupportedAlgorithmsAreRefused(alg: String) {
        let token = TokenMinter.compact(header: F.header(alg), claims: F.claims) { F.rsa.sign($0) }
        #expect(jwtErrorKind { try F.verifier(rsaKeys, allowUnsigned: true).verify(token) } == .algorithmNotAllowed)
    }

    @Test(
        arguments: [
            // (exp, nbf, iat relative to now, expected)
            (-61, nil, nil, JWTError.Kind.expired), (-59, nil, nil, nil), (3600, nil, nil, nil),
            (3600, 61, nil, .notYetValid), (3600, 59, nil, nil),
            (3600, nil, 61, .notYetValid), (3600, nil, 59, nil), (3600, -100, -100, nil),
        ] as [(Int64, Int64?, Int64?, JWTError.Kind?)])
    func timeClaimsHonourTheSkew(exp: Int64, nbf: Int64?, iat: Int64?, expected: JWTError.Kind?) {
        var times = ["exp": F.now + exp]
        if let nbf { times["nbf"] = F.now + nbf }
        if let iat { times["iat"] = F.now + iat }
        let token = TokenMinter.compact(header: F.header("HS256"), claims: F.claims(times)) {
            HMACSHA256.authenticate($0, key: F.secret)
        }
        #expect(jwtErrorKind { try F.verifier([.hmac(secret: F.secret)]).verify(token) } == expected)
    }

    @Test func expiryUsesTheInjectedClock() throws {
        let token = try TokenMinter.mintHS256(claims: F.claims, secret: F.secret, issuedAt: F.now, ttlSeconds: 3600)
        let later = TokenVerifier(keys: [.hmac(secret: F.secret)], clock: FixedClock(seconds: F.now + 3600 + 61))
        #expect(jwtErrorKind { try later.verify(token) } == .expired)
        let strict = TokenVerifier(
            keys: [.hmac(secret: F.secret)], clock: FixedClock(seconds: F.now + 3600), clockSkewSeconds: 0)
        #expect(jwtErrorKind { try strict.verify(token) } == .expired)
    }

    @Test func nonNumericTimeClaimIsMalformed() {
        let claims: JSONValue = .object([JSONMember("sub", .string("u")), JSONMember("exp", .string("tomorrow"))])
        let token = TokenMinter.compact(header: F.header("HS256"), claims: claims) {
            HMACSHA256.authenticate($0, key: F.secret)
        }
        #expect(jwtErrorKind { try F.verifier([.hmac(secret: F.secret)]).verify(token) } == .malformed)
    }

    @Test func kidSelectsTheKey() throws {
        let keys = try VerificationKey.jwks(
            json: JSONValue.object([
                JSONMember(
                    "keys", .array([F.jwk(F.rsa, kid: "a"), F.jwk(F.otherRSA, kid: "b"), F.jwk(F.ec, kid: "c")]))
            ]).serialized())
        let verifier = F.verifier(keys)
        #expect(try verifier.verify(mint(F.rsa, kid: "a")).claims["userId"] == "901")
        #expect(try verifier.verify(mint(F.otherRSA, kid: "b")).algorithm == .rs256)
        #expect(try verifier.verify(mint(F.ec, kid: "c")).algorithm == .es256)
        #expect(try verifier.verify(mint(F.rsa)).algorithm == .rs256)  // no kid: every RS256 key is tried
        #expect(jwtErrorKind { try verifier.verify(mint(F.rsa, kid: "b")) } == .badSignature)
        #expect(jwtErrorKind { try verifier.verify(mint(F.rsa, kid: "zz")) } == .unknownKey)
        #expect(jwtErrorKind { try verifier.verify(mint(F.rsa, kid: "c")) } == .unknownKey)  // c is ES256

        // A kid no key names falls back to keys configured without a kid.
        let hmac = F.verifier([.hmac(secret: F.secret)])
        let withKid = try TokenMinter.mintHS256(
            claims: F.claims, secret: F.secret, issuedAt: F.now, ttlSeconds: 60, kid: "v2")
        #expect(try hmac.verify(withKid).uid == nil)
        let named = F.verifier([
            .hmac(secret: Array("a different secret of 32 bytes!!".utf8), kid: "v2"), .hmac(secret: F.secret),
        ])
        #expect(jwtErrorKind { try named.verify(withKid) } == .badSignature)
    }

    @Test func audienceAndIssuerWhenConfigured() throws {
        func token(_ extra: [JSONMember]) -> String {
            try! TokenMinter.mintHS256(
                claims: .object(F.claims.members! + extra), secret: F.secret, issuedAt: F.now, ttlSeconds: 60)
        }
        let keys: [VerificationKey] = [.hmac(secret: F.secret)]
        let verifier = F.verifier(keys, audience: "canopy-prod", issuer: "https://id.example")
        let good = token([JSONMember("aud", .string("canopy-prod")), JSONMember("iss", .string("https://id.example"))])
        #expect(try verifier.verify(good).uid == nil)
        let list = token([
            JSONMember("aud", .array([.string("x"), .string("canopy-prod")])),
            JSONMember("iss", .string("https://id.example")),
        ])
        #expect(try verifier.verify(list).claims["ns"] == "summit-2026")
        let wrongAud = token([JSONMember("aud", .string("other")), JSONMember("iss", .string("https://id.example"))])
        #expect(jwtErrorKind { try verifier.verify(wrongAud) } == .audienceMismatch)
        let noIss = token([JSONMember("aud", .string("canopy-prod"))])
        #expect(jwtErrorKind { try verifier.verify(noIss) } == .issuerMismatch)
        #expect(try F.verifier(keys).verify(wrongAud).claims["aud"] == "other")  // unchecked when not configured
    }

    @Test func headerWithCritIsRefused() {
        let header: JSONValue = .object([
            JSONMember("alg", .string("HS256")), JSONMember("crit", .array([.string("b64")])),
        ])
        let token = TokenMinter.compact(header: header, claims: F.claims) { HMACSHA256.authenticate($0, key: F.secret) }
        #expect(jwtErrorKind { try F.verifier([.hmac(secret: F.secret)]).verify(token) } == .malformed)
    }

    @Test func emptySecretVerifiesNothing() {
        let token = TokenMinter.compact(header: F.header("HS256"), claims: F.claims) {
            HMACSHA256.authenticate($0, key: [])
        }
        #expect(jwtErrorKind { try F.verifier([.hmac(secret: [])]).verify(token) } == .badSignature)
    }

    @Test func verifiesConcurrentlyWithSharedKeys() async throws {
        let verifier = F.verifier(rsaKeys + ecKeys + [.hmac(secret: F.secret)])
        let tokens = [
            mint(F.rsa), mint(F.ec),
            try TokenMinter.mintHS256(claims: F.claims, secret: F.secret, issuedAt: F.now, ttlSeconds: 60),
        ]
        let verified = await withTaskGroup(of: Int.self) { group in
            for index in 0..<48 {
                group.addTask { (try? verifier.verify(tokens[index % tokens.count])) == nil ? 0 : 1 }
            }
            return await group.reduce(0, +)
        }
        #expect(verified == 48)
    }
}
