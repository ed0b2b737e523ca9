// PublicKey -- an OpenSSL EVP_PKEY holding an RSA or P-256 public key, and signature verification.

import CCrypto

/// An RSA (at least 2048 bits) or ECDSA P-256 public key owned by OpenSSL.
///
/// Instances are created only through the loaders (`PublicKey+PEM`, `PublicKey+Components`),
/// which refuse other key types and weak sizes.
package final class PublicKey: @unchecked Sendable {
    // Safe: `pointer` is never mutated after init; OpenSSL 3 allows concurrent read-only use of
    // one EVP_PKEY (each verification creates its own EVP_MD_CTX), and deinit runs only once
    // no reference remains.

    /// The kind of key, which decides the JWS algorithm it can verify.
    package enum Kind: Sendable, Equatable {
        case rsa
        case ecP256

        /// The JWS algorithm a key of this kind is pinned to.
        package var algorithm: JWTAlgorithm {
            switch self {
            case .rsa: .rs256
            case .ecP256: .es256
            }
        }
    }

    /// The smallest accepted RSA modulus, in bits.
    package static let minimumRSABits: Int32 = 2048

    /// The owned `EVP_PKEY *`.
    let pointer: OpaquePointer
    /// The kind of key.
    package let kind: Kind

    /// Takes ownership of `pointer` (freed here on failure), checking type and strength.
    init(taking pointer: OpaquePointer) throws(JWTError) {
        if EVP_PKEY_is_a(pointer, "RSA") == 1 {
            guard EVP_PKEY_get_bits(pointer) >= Self.minimumRSABits else {
                EVP_PKEY_free(pointer)
                throw .invalidKey("RSA keys must have at least \(Self.minimumRSABits) bits")
            }
            kind = .rsa
        } else if EVP_PKEY_is_a(pointer, "EC") == 1 {
            guard Self.curveName(of: pointer).map(Self.p256Names.contains) == true else {
                EVP_PKEY_free(pointer)
                throw .invalidKey("EC keys must be on the P-256 curve")
            }
            kind = .ecP256
        } else {
            EVP_PKEY_free(pointer)
            throw .invalidKey("only RSA and EC P-256 public keys are supported")
        }
        self.pointer = pointer
    }

    deinit { EVP_PKEY_free(pointer) }

    /// Checks a JWS signature over `message` with SHA-256.
    ///
    /// - Parameters:
    ///   - signature: For RSA the PKCS#1 v1.5 signature (exactly the modulus length); for P-256
    ///     the JWS raw `r || s` (64 bytes).
    ///   - message: The JWS signing input (`header.payload` in ASCII).
    /// - Returns: Whether the signature is valid. Any malformed signature is simply invalid.
    package func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        let der: [UInt8]
        switch kind {
        case .rsa:
            guard signature.count == Int(EVP_PKEY_get_size(pointer)) else { return false }
            der = signature
        case .ecP256:
            guard let converted = ECDSASignature.der(fromRaw: signature) else { return false }
            der = converted
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(context)
            ERR_clear_error()
        }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, pointer) == 1 else { return false }
        let messageBytes = message.isEmpty ? [0] : message
        return der.withUnsafeBufferPointer { sig in
            messageBytes.withUnsafeBufferPointer { msg in
                EVP_DigestVerify(context, sig.baseAddress, sig.count, msg.baseAddress, message.count) == 1
            }
        }
    }

    private static let p256Names: Set<String> = ["prime256v1", "P-256", "secp256r1"]

    private static func curveName(of key: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        let ok = buffer.withUnsafeMutableBufferPointer { out in
            EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, out.baseAddress, out.count, &length)
        }
        guard ok == 1 else {
            ERR_clear_error()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
