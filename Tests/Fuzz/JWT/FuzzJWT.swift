// FuzzJWT -- libFuzzer target for token parsing and verification (CompactJWS, TokenVerifier, JWKS and PEM keys)
// with a fixed HS256 key and a fixed clock (Tests/fuzz.sh).
//
// The first byte chooses the mode; the rest is
//   0: a token, verified (signed keys and `alg: none`) and read unverified;
//   1: a claims object, minted with the key and verified: a minted token never fails on structure or signature;
//   2: a JOSE header, signed with the key over fixed claims, so header handling past the signature is reached;
//   3: a JWK Set and a PEM document, loaded as verification keys.
// Invariants: nothing crashes; a verified token's claims are those it carries.

@testable import CanopyAuth
import CanopyCore
import FuzzSupport

@main enum Main { static func main() { runFuzzer(fuzz) } }

private struct FixedClock: WallClock {
    func nowMilliseconds() -> Int64 { 1_700_000_000_000 }
}

private let secret = Array("fuzzing-secret-0123456789abcdef".utf8)
private let strict = TokenVerifier(keys: [.hmac(secret: secret, kid: "k1")], clock: FixedClock())
private let lenient = TokenVerifier(
    keys: [.hmac(secret: secret), .hmac(secret: Array("other".utf8), kid: "k2")], clock: FixedClock(),
    allowUnsigned: true, audience: "canopy", issuer: "https://issuer.example")
private let claims = #"{"uid":"ada","iat":1699999999,"exp":1700003600,"aud":"canopy","iss":"https://issuer.example"}"#

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = inputBytes(data, size)
    guard let first = input.first, let text = String(validating: input.dropFirst(), as: UTF8.self) else { return 0 }
    switch first % 4 {
    case 0:
        verify(text)
        _ = try? UnverifiedClaims.of(text)
    case 1:
        guard let json = try? JSONValue.parse(text), case .object = json,
            let token = try? TokenMinter.mintHS256(claims: json, secret: secret, issuedAt: 1_699_999_000, ttlSeconds: 3600)
        else { return 0 }
        do {
            let verified = try strict.verify(token)
            inspect(verified)
        } catch {
            switch error.kind {
            case .malformed, .algorithmNotAllowed, .unknownKey, .badSignature:
                fatalError("a minted token fails verification: \(error) -- \(token)")
            default: break
            }
        }
    case 2:
        let signingInput = CompactJWS.encodeBase64URL(Array(text.utf8)) + "." + CompactJWS.encodeBase64URL(Array(claims.utf8))
        let signature = HMACSHA256.authenticate(Array(signingInput.utf8), key: secret)
        verify(signingInput + "." + CompactJWS.encodeBase64URL(signature))
    default:
        _ = try? VerificationKey.jwks(json: text)
        _ = try? VerificationKey.publicKeys(pem: text)
    }
    return 0
}

private func verify(_ token: String) {
    for verifier in [strict, lenient] {
        guard let verified = try? verifier.verify(token) else { continue }
        guard let carried = try? UnverifiedClaims.of(token), carried == verified.claims else {
            fatalError("a verified token's claims differ from the ones it carries")
        }
        inspect(verified)
    }
}

private func inspect(_ token: VerifiedToken) {
    _ = token.uid
    _ = token.expiresAt
    _ = token.isLegacy
    _ = token.legacyExpiresAt
    _ = token.isAdmin
    _ = token.allows(namespace: "default")
    _ = token.rulesAuth
}
