// ECDSASignature -- converts ES256 signatures between JWS raw form and DER.
//
// JWS (RFC 7518 §3.4) encodes an ECDSA P-256 signature as the two 32-byte big-endian
// integers r and s concatenated (64 bytes). OpenSSL's EVP interface speaks the ASN.1 DER
// form `SEQUENCE { INTEGER r, INTEGER s }`. Conversion goes through OpenSSL's ECDSA_SIG so
// DER encoding rules (minimal integers, sign bytes) are OpenSSL's, not ours.

import CCrypto

/// Conversion between the JWS raw `r || s` form and DER for P-256 ECDSA signatures.
package enum ECDSASignature {
    /// The byte length of one P-256 scalar.
    package static let scalarLength = 32

    /// Converts a 64-byte raw `r || s` signature to DER, or returns nil if it is not 64 bytes.
    package static func der(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 2 * scalarLength, let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let (r, s) = raw.withUnsafeBufferPointer { p in
            (
                BN_bin2bn(p.baseAddress, Int32(scalarLength), nil),
                BN_bin2bn(p.baseAddress! + scalarLength, Int32(scalarLength), nil)
            )
        }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else {  // on success sig owns r and s
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(sig, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(sig, &cursor)
        }
        return written == length ? der : nil
    }

    /// Converts a DER signature to the 64-byte raw `r || s` form, or returns nil if it does not parse.
    package static func raw(fromDER der: [UInt8]) -> [UInt8]? {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let sig = parsed else {
            ERR_clear_error()
            return nil
        }
        defer { ECDSA_SIG_free(sig) }
        var raw = [UInt8](repeating: 0, count: 2 * scalarLength)
        let ok = raw.withUnsafeMutableBufferPointer { out in
            BN_bn2binpad(ECDSA_SIG_get0_r(sig), out.baseAddress, Int32(scalarLength)) == scalarLength
                && BN_bn2binpad(ECDSA_SIG_get0_s(sig), out.baseAddress! + scalarLength, Int32(scalarLength))
                    == scalarLength
        }
        return ok ? raw : nil
    }
}
