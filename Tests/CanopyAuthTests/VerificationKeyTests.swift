// VerificationKeyTests -- loading keys from PEM and JWKS, and the algorithm each key is pinned to.

import CanopyCore
import Testing

@testable import CanopyAuth

@Suite struct VerificationKeyTests {
    typealias F = Fixtures

    private func set(_ keys: [JSONValue]) -> String {
        JSONValue.object([JSONMember("keys", .array(keys))]).serialized()
    }

    @Test func pemKeysArePinnedByType() throws {
        let keys = try VerificationKey.publicKeys(pem: F.rsa.publicKeyPEM + F.ec.publicKeyPEM)
        #expect(keys.map(\.algorithm) == [.rs256, .es256])
        #expect(keys.allSatisfy { $0.kid == nil })
        #expect(VerificationKey.hmac(secret: F.secret, kid: "k").algorithm == .hs256)
        #expect(VerificationKey.hmac(secret: F.secret, kid: "k").kid == "k")
    }

    @Test func jwksWithRSAAndECKeys() throws {
        let keys = try VerificationKey.jwks(json: set([F.jwk(F.rsa, kid: "r1"), F.jwk(F.ec, kid: "e1", alg: false)]))
        #expect(keys.map(\.algorithm) == [.rs256, .es256])
        #expect(keys.map(\.kid) == ["r1", "e1"])
        let token = try TokenMinter.mint(claims: F.claims, key: F.ec, issuedAt: F.now, ttlSeconds: 60, kid: "e1")
        #expect(try F.verifier(keys).verify(token).algorithm == .es256)
    }

    @Test func aSingleBareJWKIsAccepted() throws {
        let keys = try VerificationKey.jwks(json: F.jwk(F.rsa, kid: nil).serialized())
        #expect(keys.count == 1)
        #expect(keys.first?.algorithm == .rs256)
    }

    @Test func unusableKeysAreSkipped() throws {
        let encryption: JSONValue = .object(
            F.jwk(F.otherRSA, kid: "enc").members!.filter { $0.key != "use" } + [JSONMember("use", .string("enc"))])
        let rs384: JSONValue = .object(
            F.jwk(F.otherRSA, kid: "384").members!.filter { $0.key != "alg" } + [JSONMember("alg", .string("RS384"))])
        let oct: JSONValue = ["kty": "oct", "k": "c2VjcmV0", "kid": "sym"]
        let otherCurve: JSONValue = ["kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"]
        let okp: JSONValue = ["kty": "OKP", "crv": "Ed25519", "x": "AA"]
        let keys = try VerificationKey.jwks(
            json: set([encryption, rs384, oct, otherCurve, okp, F.jwk(F.rsa, kid: "ok")]))
        #expect(keys.map(\.kid) == ["ok"])
    }

    @Test(arguments: [
        "", "[]", "{}", #"{"keys":{}}"#, #"{"keys":[]}"#, #"{"keys":[1]}"#, #"{"keys":[{"n":"AQAB"}]}"#,
        #"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#,
        #"{"keys":[{"kty":"RSA","e":"AQAB"}]}"#,
        #"{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}"#,  // far too short
        #"{"keys":[{"kty":"RSA","n":"!!","e":"AQAB"}]}"#,
        #"{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}"#,
        #"{"keys":[{"kty":"EC","x":"AA","y":"AA"}]}"#,
        #"{"keys":[{"kty":"RSA","kid":7}]}"#,
    ])
    func badKeySetsAreRefused(json: String) {
        #expect(jwtErrorKind { try VerificationKey.jwks(json: json) } == .invalidKey)
    }

    @Test func paddedOrOffCurveComponentsAreRefused() {
        let padded: JSONValue = .object(
            F.jwk(F.rsa, kid: "p").members!.map { $0.key == "e" ? JSONMember("e", .string("AQAB=")) : $0 })
        #expect(jwtErrorKind { try VerificationKey.jwks(json: set([padded])) } == .invalidKey)
        var y = F.ec.publicComponents[1].bytes
        y[0] ^= 0x80
        let offCurve: JSONValue = .object(
            F.jwk(F.ec, kid: "c").members!.map {
                $0.key == "y" ? JSONMember("y", .string(Base64.encode(y, url: true, padding: false))) : $0
            })
        #expect(jwtErrorKind { try VerificationKey.jwks(json: set([offCurve])) } == .invalidKey)
    }
}
