// VerificationKey -- a key a token may be verified against, pinned to one JWS algorithm and optionally a kid.

import CanopyCore

/// A key that ``TokenVerifier`` checks signatures with.
///
/// Each key is pinned to one algorithm: an HMAC secret verifies only HS256, an RSA key only
/// RS256, a P-256 key only ES256. A token whose header `alg` differs from the key's algorithm
/// is never checked against it, which rules out algorithm confusion (for example an HS256
/// token "signed" with an RSA public key's bytes).
public struct VerificationKey: Sendable {
    enum Material: Sendable {
        case secret([UInt8])
        case publicKey(PublicKey)
    }

    /// The only algorithm this key verifies.
    public let algorithm: JWTAlgorithm
    /// The key id a token header's `kid` selects this key by, if any.
    public let kid: String?
    let material: Material

    /// An HS256 key from a shared secret (for example the daemon's ``SecretFile``).
    ///
    /// An empty secret verifies nothing.
    public static func hmac(secret: [UInt8], kid: String? = nil) -> VerificationKey {
        VerificationKey(algorithm: .hs256, kid: kid, material: .secret(secret))
    }

    /// The RS256/ES256 keys in PEM text: `PUBLIC KEY`, `RSA PUBLIC KEY` or `CERTIFICATE` blocks.
    ///
    /// Keys from PEM carry no kid, so they are tried for every token of their algorithm.
    /// - Throws: ``JWTError`` of kind `invalidKey` for text without a usable block, private keys,
    ///   key types other than RSA and P-256, or RSA keys under 2048 bits.
    public static func publicKeys(pem: String) throws(JWTError) -> [VerificationKey] {
        try PublicKey.load(pem: pem).map { key in
            VerificationKey(algorithm: key.kind.algorithm, kid: nil, material: .publicKey(key))
        }
    }

    /// The RS256/ES256 keys of a JSON Web Key Set (RFC 7517 `{"keys": [...]}`, or one bare JWK).
    ///
    /// See `VerificationKey+JWKS.swift` for which members are read and which keys are skipped.
    /// - Throws: ``JWTError`` of kind `invalidKey` for text that is not a JWK set, a usable key with
    ///   bad members, or a set without any usable key.
    public static func jwks(json: String) throws(JWTError) -> [VerificationKey] {
        try JWKSet.parse(json)
    }

    /// Whether `signature` is this key's valid signature of `message` (the JWS signing input).
    func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        switch material {
        case .secret(let secret):
            guard !secret.isEmpty else { return false }
            return HMACSHA256.constantTimeEquals(HMACSHA256.authenticate(message, key: secret), signature)
        case .publicKey(let key):
            return key.isValidSignature(signature, for: message)
        }
    }
}
