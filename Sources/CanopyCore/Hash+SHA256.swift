// Hash+SHA256 -- SHA-256 as lowercase hex, the content hash that names backup files.

#if canImport(CryptoKit)
    import CryptoKit

    extension Hash {
        /// SHA-256 of `bytes`, as 64 lowercase hexadecimal digits.
        public static func sha256Hex(_ bytes: [UInt8]) -> String {
            hex(Array(SHA256.hash(data: bytes)))
        }
    }
#else
    import CCrypto

    extension Hash {
        /// SHA-256 of `bytes`, as 64 lowercase hexadecimal digits.
        public static func sha256Hex(_ bytes: [UInt8]) -> String {
            var digest = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            let ok = bytes.withUnsafeBytes { input in
                EVP_Digest(input.baseAddress, input.count, &digest, &length, EVP_sha256(), nil)
            }
            precondition(ok == 1 && length == 32, "OpenSSL SHA-256 failed")
            return hex(digest)
        }
    }
#endif

extension Hash {
    static func hex(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(digest.count * 2)
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
