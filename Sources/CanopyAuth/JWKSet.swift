// JWKSet -- reads RS256 and ES256 verification keys from JSON Web Key text (RFC 7517, RFC 7518 §6).
//
// Accepted: `{"keys": [jwk, ...]}` or a single JWK object. Per key:
//   kty "RSA": `n`, `e` (base64url big-endian integers);  kty "EC": `crv` "P-256", `x`, `y`.
//   `kid` (string) is kept; `alg`, when present, must match the key type (RS256 / ES256).
// Skipped, not refused: keys with `use` other than "sig", other key types ("oct", "OKP"),
// other curves, and keys whose `alg` names an algorithm Canopy does not verify (RS384 etc.), so a
// provider's published set that also lists encryption or unsupported keys still loads.
// Symmetric ("oct") keys are never taken from a JWK set: a key set is public data.

import CanopyCore

enum JWKSet {
    static let maximumBytes = 1 << 20

    static func parse(_ json: String) throws(JWTError) -> [VerificationKey] {
        guard json.utf8.count <= maximumBytes else { throw .invalidKey("JWK set is larger than 1 MiB") }
        let document: JSONValue
        do {
            document = try JSONValue.parse(json, options: JSONParseOptions(maxDepth: 16))
        } catch {
            throw .invalidKey("JWK set is not valid JSON (\(error.userMessage))")
        }
        let entries: [JSONValue]
        if let list = document["keys"] {
            guard let array = list.arrayValue else { throw .invalidKey("JWK set member 'keys' is not an array") }
            entries = array
        } else if document["kty"] != nil {
            entries = [document]
        } else {
            throw .invalidKey("JWK set has no 'keys' array")
        }
        var keys: [VerificationKey] = []
        for (index, entry) in entries.enumerated() {
            if let key = try key(from: entry, index: index) { keys.append(key) }
        }
        guard !keys.isEmpty else { throw .invalidKey("JWK set holds no RS256 or ES256 signing key") }
        return keys
    }

    /// Builds one key, or returns nil for a key that is well-formed but not one Canopy verifies with.
    private static func key(from jwk: JSONValue, index: Int) throws(JWTError) -> VerificationKey? {
        guard jwk.members != nil else { throw .invalidKey("JWK \(index) is not an object") }
        let kty = try string(jwk, "kty", index, required: true)!
        if let use = try string(jwk, "use", index), use != "sig" { return nil }
        let kid = try string(jwk, "kid", index)
        let alg = try string(jwk, "alg", index)
        let key: PublicKey
        switch kty {
        case "RSA":
            if let alg, alg != JWTAlgorithm.rs256.rawValue { return nil }
            key = try PublicKey.rsa(modulus: try bytes(jwk, "n", index), exponent: try bytes(jwk, "e", index))
        case "EC":
            if let alg, alg != JWTAlgorithm.es256.rawValue { return nil }
            guard try string(jwk, "crv", index, required: true) == "P-256" else { return nil }
            key = try PublicKey.ecP256(x: try bytes(jwk, "x", index), y: try bytes(jwk, "y", index))
        default:
            return nil
        }
        return VerificationKey(algorithm: key.kind.algorithm, kid: kid, material: .publicKey(key))
    }

    private static func string(_ jwk: JSONValue, _ name: String, _ index: Int, required: Bool = false)
        throws(JWTError) -> String?
    {
        guard let value = jwk[name] else {
            if required { throw .invalidKey("JWK \(index) has no '\(name)'") }
            return nil
        }
        guard let text = value.stringValue else { throw .invalidKey("JWK \(index) member '\(name)' is not a string") }
        return text
    }

    private static func bytes(_ jwk: JSONValue, _ name: String, _ index: Int) throws(JWTError) -> [UInt8] {
        let text = try string(jwk, name, index, required: true)!
        guard let bytes = CompactJWS.decodeBase64URL(text), !bytes.isEmpty else {
            throw .invalidKey("JWK \(index) member '\(name)' is not unpadded base64url")
        }
        return bytes
    }
}
