// HMACSHA256 -- HMAC-SHA256 (RFC 2104) and constant-time comparison through OpenSSL libcrypto.

import CCrypto

/// HMAC-SHA256 and a constant-time byte comparison.
package enum HMACSHA256 {
    /// The length of an HMAC-SHA256 tag in bytes.
    package static let tagLength = 32

    /// Returns the 32-byte HMAC-SHA256 tag of `message` under `key`.
    ///
    /// An empty key is allowed by the algorithm (it is padded with zeros); callers that
    /// accept keys from outside refuse short secrets before they get here.
    package static func authenticate(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: tagLength)
        var written: UInt32 = 0
        // OpenSSL wants non-NULL pointers even for zero lengths; empty inputs borrow a dummy byte.
        let keyBytes = key.isEmpty ? [0] : key
        let messageBytes = message.isEmpty ? [0] : message
        let ok = keyBytes.withUnsafeBytes { k in
            messageBytes.withUnsafeBufferPointer { m in
                tag.withUnsafeMutableBufferPointer { out in
                    HMAC(
                        EVP_sha256(), k.baseAddress, Int32(key.count), m.baseAddress, message.count,
                        out.baseAddress, &written) != nil
                }
            }
        }
        precondition(ok && Int(written) == tagLength, "HMAC-SHA256 failed inside libcrypto")
        return tag
    }

    /// Compares two byte strings in time that depends only on their lengths (`CRYPTO_memcmp`).
    package static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 }
        }
    }
}
