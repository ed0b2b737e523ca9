// JWTAlgorithm -- the JWS signature algorithms Canopy accepts (RFC 7518 §3.1 names).

/// A JWS signature algorithm, named as in the token header's `alg` member.
///
/// Every ``VerificationKey`` is pinned to exactly one algorithm; a token verifies only
/// against keys whose algorithm equals its header `alg`. The unsigned `none` algorithm is
/// deliberately not a case: it is handled by ``TokenVerifier``'s emulator switch.
public enum JWTAlgorithm: String, Sendable, CaseIterable {
    /// HMAC with SHA-256 over a shared secret.
    case hs256 = "HS256"
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    case rs256 = "RS256"
    /// ECDSA over P-256 with SHA-256; the signature is the raw 64-byte `r || s`.
    case es256 = "ES256"
}
