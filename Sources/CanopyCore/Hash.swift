// Hash -- SHA-1 + standard base64, the digest format of Firebase data hashes (OpenSSL libcrypto on Linux,
// CryptoKit on Apple platforms, so the client library needs no OpenSSL there).

#if canImport(CryptoKit)
    // CryptoKit rather than CommonCrypto: `CC_SHA1` is deprecated on Apple platforms and would warn there.
    import CryptoKit
    import Foundation

    /// SHA-1 digests encoded the way Firebase clients encode data hashes.
    public enum Hash {
        /// base64(SHA-1(UTF-8 bytes of `text`)), standard alphabet with `=` padding: always 28 characters.
        public static func sha1Base64(_ text: String) -> String {
            Base64.encode(Array(Insecure.SHA1.hash(data: Array(text.utf8))))
        }

        /// base64(SHA-1(`bytes`)), standard alphabet with `=` padding.
        public static func sha1Base64(bytes: UnsafeRawBufferPointer) -> String {
            // SHA-1 is what the Firebase protocol specifies for data hashes (not a security use).
            Base64.encode(Array(Insecure.SHA1.hash(data: bytes)))
        }
    }
#else
    import CCrypto

    /// SHA-1 digests encoded the way Firebase clients encode data hashes.
    public enum Hash {
        /// The SHA-1 implementation, fetched once: an implicit fetch on every digest (what `EVP_sha1()` leads to in
        /// OpenSSL 3) costs about as much as hashing a short text.
        /// Safe to share: OpenSSL documents fetched `EVP_MD` objects as immutable and usable from any thread; this
        /// one is never freed and never mutated after initialisation.
        nonisolated(unsafe) private static let sha1Algorithm: OpaquePointer? = EVP_MD_fetch(nil, "SHA1", nil)

        /// base64(SHA-1(UTF-8 bytes of `text`)), standard alphabet with `=` padding: always 28 characters.
        public static func sha1Base64(_ text: String) -> String {
            var text = text
            return text.withUTF8 { sha1Base64(bytes: UnsafeRawBufferPointer($0)) }
        }

        /// base64(SHA-1(`bytes`)), standard alphabet with `=` padding.
        public static func sha1Base64(bytes: UnsafeRawBufferPointer) -> String {
            // 20 digest bytes, then 28 base64 characters plus EVP_EncodeBlock's terminating NUL.
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20 + 29) { buffer in
                let digest = buffer.baseAddress!
                let encoded = digest + 20
                var length: UInt32 = 0
                let ok = EVP_Digest(bytes.baseAddress, bytes.count, digest, &length, sha1Algorithm ?? EVP_sha1(), nil)
                precondition(ok == 1 && length == 20, "OpenSSL SHA-1 failed")
                let written = EVP_EncodeBlock(encoded, digest, 20)
                precondition(written == 28, "OpenSSL base64 encoding failed")
                return String(unsafeUninitializedCapacity: 28) { out in
                    _ = out.initialize(from: UnsafeBufferPointer(start: encoded, count: 28))
                    return 28
                }
            }
        }
    }
#endif
