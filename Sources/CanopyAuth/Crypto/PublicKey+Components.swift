// PublicKey+Components -- builds public keys from raw components, as JWKs carry them (RFC 7518 §6).
//
// RSA: modulus `n` and public exponent `e` as unsigned big-endian integers.
// EC P-256: affine coordinates `x` and `y`, each exactly 32 bytes big-endian; the point is
// handed to OpenSSL in uncompressed SEC 1 form (0x04 || x || y) and checked to be on the curve.

import CCrypto

extension PublicKey {
    /// Builds an RSA public key from its modulus and exponent (big-endian, leading zeros allowed).
    ///
    /// - Throws: ``JWTError`` of kind `invalidKey` when a component is empty, the exponent is
    ///   even or below 3, or the modulus is shorter than ``minimumRSABits``.
    package static func rsa(modulus: [UInt8], exponent: [UInt8]) throws(JWTError) -> PublicKey {
        let n = modulus.drop(while: { $0 == 0 })
        let e = exponent.drop(while: { $0 == 0 })
        guard !n.isEmpty, !e.isEmpty, e.count <= 8 else { throw .invalidKey("RSA components are empty or too large") }
        guard e.last! & 1 == 1, e.count > 1 || e.first! >= 3 else { throw .invalidKey("RSA exponent is not valid") }
        guard n.count * 8 >= Int(minimumRSABits), n.count <= 2048 else {
            throw .invalidKey("RSA keys must have at least \(minimumRSABits) bits")
        }
        guard let nBN = bignum(Array(n)), let eBN = bignum(Array(e)) else { throw .invalidKey("RSA components") }
        defer {
            BN_free(nBN)
            BN_free(eBN)
        }
        return try fromData(type: "RSA") { builder, keep in
            OSSL_PARAM_BLD_push_BN(builder, keep.cString(OSSL_PKEY_PARAM_RSA_N), nBN) == 1
                && OSSL_PARAM_BLD_push_BN(builder, keep.cString(OSSL_PKEY_PARAM_RSA_E), eBN) == 1
        }
    }

    /// Builds a P-256 public key from its affine coordinates (each exactly 32 bytes).
    ///
    /// - Throws: ``JWTError`` of kind `invalidKey` when a coordinate has the wrong length or the
    ///   point is not on the curve.
    package static func ecP256(x: [UInt8], y: [UInt8]) throws(JWTError) -> PublicKey {
        guard x.count == ECDSASignature.scalarLength, y.count == ECDSASignature.scalarLength else {
            throw .invalidKey("P-256 coordinates must be 32 bytes each")
        }
        let point: [UInt8] = [0x04] + x + y
        let key = try fromData(type: "EC") { builder, keep in
            OSSL_PARAM_BLD_push_utf8_string(
                builder, keep.cString(OSSL_PKEY_PARAM_GROUP_NAME), keep.cString("prime256v1"), 0) == 1
                && OSSL_PARAM_BLD_push_octet_string(
                    builder, keep.cString(OSSL_PKEY_PARAM_PUB_KEY), keep.bytes(point), point.count) == 1
        }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.pointer, nil) else {
            throw .invalidKey("cannot check the P-256 point")
        }
        defer {
            EVP_PKEY_CTX_free(context)
            ERR_clear_error()
        }
        guard EVP_PKEY_public_check(context) == 1 else { throw .invalidKey("the point is not on the P-256 curve") }
        return key
    }

    /// `EVP_PKEY_PUBLIC_KEY`, spelled out because Swift does not import that compound macro.
    private static let publicKeySelection = Int32(
        OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY)

    private static func bignum(_ bytes: [UInt8]) -> OpaquePointer? {
        bytes.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
    }

    /// Runs OpenSSL's `EVP_PKEY_fromdata` for a public key of `type` with parameters pushed by `push`.
    private static func fromData(type: String, push: (OpaquePointer, ParameterStorage) -> Bool) throws(JWTError)
        -> PublicKey
    {
        guard let builder = OSSL_PARAM_BLD_new() else { throw .invalidKey("out of memory") }
        let storage = ParameterStorage()
        defer {
            withExtendedLifetime(storage) {}
            OSSL_PARAM_BLD_free(builder)
            ERR_clear_error()
        }
        guard push(builder, storage), let params = OSSL_PARAM_BLD_to_param(builder) else {
            throw .invalidKey("\(type) key parameters are not valid")
        }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, type, nil) else { throw .invalidKey("no \(type) support") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1,
            EVP_PKEY_fromdata(context, &key, publicKeySelection, params) == 1, let key
        else { throw .invalidKey("\(type) key parameters are not valid") }
        return try PublicKey(taking: key)
    }
}

/// Owns copies of the names and values pushed into an `OSSL_PARAM_BLD`.
///
/// The builder keeps the caller's pointers (it copies nothing until `OSSL_PARAM_BLD_to_param`),
/// so bridged Swift strings, whose C form lives only for one call, cannot be passed directly.
private final class ParameterStorage {
    private var allocations: [UnsafeMutableRawPointer] = []

    /// A NUL-terminated copy of `text` that lives as long as this storage.
    func cString(_ text: String) -> UnsafePointer<CChar> {
        let utf8 = Array(text.utf8) + [0]
        return UnsafePointer(UnsafeRawPointer(bytes(utf8)).assumingMemoryBound(to: CChar.self))
    }

    /// A copy of `data` that lives as long as this storage.
    func bytes(_ data: [UInt8]) -> UnsafeMutableRawPointer {
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: max(data.count, 1), alignment: 1)
        data.withUnsafeBytes { if let base = $0.baseAddress { pointer.copyMemory(from: base, byteCount: $0.count) } }
        allocations.append(pointer)
        return pointer
    }

    deinit { for pointer in allocations { pointer.deallocate() } }
}
