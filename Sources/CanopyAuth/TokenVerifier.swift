// TokenVerifier -- verifies compact JWS tokens: structure, pinned algorithm, signature, then time and audience.
//
// Order of checks (the first failure is reported):
//   1. structure: ≤ 16 KiB, three parts, unpadded base64url, header is a JSON object with a string `alg`,
//      no `crit` (no JWS extension is understood, RFC 7515 §4.1.11);
//   2. algorithm: `none` only with `allowUnsigned` (the Firebase emulator's mock tokens, whose signature
//      part is empty); otherwise `alg` must be HS256, RS256 or ES256 and some configured key must be pinned
//      to it -- keys of other algorithms are never tried;
//   3. key selection by `kid`: keys with that kid; if none has it, keys without a kid;
//      a token without kid tries every key of its algorithm;
//   4. signature (HMAC compared with CRYPTO_memcmp);
//   5. claims: a JSON object; `exp`, `nbf`, `iat` must be numbers when present and are checked against
//      the injected clock with `clockSkewSeconds` of tolerance; `aud` and `iss` when configured.
// Claims are parsed only after the signature checks out.

import CanopyCore

/// Verifies tokens against a fixed set of keys and an injected clock.
///
/// ```swift
/// let verifier = TokenVerifier(keys: [.hmac(secret: secret)], clock: SystemClock())
/// let token = try verifier.verify(text)        // throws JWTError
/// guard token.allows(namespace: "summit-2026") else { ... }
/// ```
public struct TokenVerifier: Sendable {
    /// The keys tokens may be signed with.
    public let keys: [VerificationKey]
    /// The source of "now" for `exp`, `nbf` and `iat`.
    public let clock: any WallClock
    /// How far (in seconds) the issuer's clock may be off from ours.
    public let clockSkewSeconds: Int64
    /// Whether unsigned (`alg: none`) tokens are accepted: emulator mode only.
    public let allowUnsigned: Bool
    /// When set, the `aud` claim must equal it (or be an array containing it).
    public let audience: String?
    /// When set, the `iss` claim must equal it.
    public let issuer: String?

    /// Creates a verifier.
    ///
    /// - Parameters:
    ///   - keys: The accepted keys, each pinned to its algorithm.
    ///   - clock: The wall clock used for time claims.
    ///   - clockSkewSeconds: Tolerance for `exp`, `nbf` and `iat`, in seconds (not negative).
    ///   - allowUnsigned: Accept `alg: none` tokens with an empty signature (Firebase emulator mode).
    ///   - audience: Required `aud` value, if any.
    ///   - issuer: Required `iss` value, if any.
    public init(
        keys: [VerificationKey], clock: any WallClock, clockSkewSeconds: Int64 = 60,
        allowUnsigned: Bool = false, audience: String? = nil, issuer: String? = nil
    ) {
        precondition(clockSkewSeconds >= 0, "clock skew cannot be negative")
        self.keys = keys
        self.clock = clock
        self.clockSkewSeconds = clockSkewSeconds
        self.allowUnsigned = allowUnsigned
        self.audience = audience
        self.issuer = issuer
    }

    /// Verifies `token` and returns its claims.
    ///
    /// A pure function of the token, the keys and the clock; safe to fuzz.
    /// - Throws: ``JWTError`` saying which check failed; never crashes on any input.
    public func verify(_ token: String) throws(JWTError) -> VerifiedToken {
        let jws = try CompactJWS(token)
        guard let alg = jws.header["alg"]?.stringValue else { throw .malformed("header has no string 'alg'") }
        guard jws.header["crit"] == nil else { throw .malformed("header has a 'crit' extension") }
        let algorithm: JWTAlgorithm?
        if alg == "none" {
            guard allowUnsigned else { throw JWTError(.algorithmNotAllowed, "unsigned tokens (alg none) are refused") }
            guard jws.signature.isEmpty else { throw .malformed("an unsigned token must have an empty signature") }
            algorithm = nil
        } else {
            guard let pinned = JWTAlgorithm(rawValue: alg) else {
                throw JWTError(.algorithmNotAllowed, "alg \(Self.printable(alg)) is not supported")
            }
            try checkSignature(jws, algorithm: pinned)
            algorithm = pinned
        }
        let claims = try jws.claims()
        try checkTimes(claims)
        try checkAudienceAndIssuer(claims)
        return VerifiedToken(claims: claims, algorithm: algorithm)
    }

    private func checkSignature(_ jws: CompactJWS, algorithm: JWTAlgorithm) throws(JWTError) {
        let pinned = keys.filter { $0.algorithm == algorithm }
        guard !pinned.isEmpty else {
            throw JWTError(.algorithmNotAllowed, "no key is configured for alg \(algorithm.rawValue)")
        }
        var candidates = pinned
        if let kidValue = jws.header["kid"] {
            guard let kid = kidValue.stringValue else { throw .malformed("header 'kid' is not a string") }
            let named = pinned.filter { $0.kid.map { Array($0.utf8) == Array(kid.utf8) } ?? false }
            candidates = named.isEmpty ? pinned.filter { $0.kid == nil } : named
            guard !candidates.isEmpty else { throw JWTError(.unknownKey, "no \(algorithm.rawValue) key has that kid") }
        }
        guard candidates.contains(where: { $0.isValidSignature(jws.signature, for: jws.signingInput) }) else {
            throw JWTError(.badSignature, "signature does not match any \(algorithm.rawValue) key")
        }
    }

    private func checkTimes(_ claims: JSONValue) throws(JWTError) {
        let now = Double(clock.nowMilliseconds()) / 1000
        let skew = Double(clockSkewSeconds)
        if let exp = try Self.numericDate(claims, "exp"), now >= exp + skew {
            throw JWTError(.expired, "token expired")
        }
        if let nbf = try Self.numericDate(claims, "nbf"), now + skew < nbf {
            throw JWTError(.notYetValid, "token is not valid before its 'nbf' time")
        }
        if let iat = try Self.numericDate(claims, "iat"), now + skew < iat {
            throw JWTError(.notYetValid, "token was issued in the future")
        }
    }

    private func checkAudienceAndIssuer(_ claims: JSONValue) throws(JWTError) {
        if let audience {
            let wanted = Array(audience.utf8)
            let matches: Bool
            switch claims["aud"] {
            case .string(let aud)?: matches = Array(aud.utf8) == wanted
            case .array(let list)?: matches = list.contains { $0.stringValue.map { Array($0.utf8) == wanted } ?? false }
            default: matches = false
            }
            guard matches else { throw JWTError(.audienceMismatch, "'aud' does not name this database") }
        }
        if let issuer {
            guard let iss = claims["iss"]?.stringValue, Array(iss.utf8) == Array(issuer.utf8) else {
                throw JWTError(.issuerMismatch, "'iss' is not the configured issuer")
            }
        }
    }

    /// A NumericDate claim (seconds since the epoch) if present; a non-number is malformed.
    static func numericDate(_ claims: JSONValue, _ name: String) throws(JWTError) -> Double? {
        guard let value = claims[name] else { return nil }
        guard let seconds = value.doubleValue, seconds.isFinite else {
            throw .malformed("claim '\(name)' is not a number")
        }
        return seconds
    }

    /// An attacker-chosen header value, shown only if it is short and plain.
    private static func printable(_ text: String) -> String {
        let plain =
            text.utf8.count <= 16
            && text.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            }
        return plain ? "'\(text)'" : "(unprintable)"
    }
}
