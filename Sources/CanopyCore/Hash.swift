// Hash -- SHA-1 + standard base64, the digest format of Firebase data hashes (via OpenSSL libcrypto).

import CCrypto

/// SHA-1 digests encoded the way Firebase clients encode data hashes.
public enum Hash {
    /// base64(SHA-1(UTF-8 bytes of `text`)), standard alphabet with `=` padding: always 28 characters.
    public static func sha1Base64(_ text: String) -> String {
        var text = text
        return text.withUTF8 { sha1Base64(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// base64(SHA-1(`bytes`)), standard alphabet with `=` padding.
    public static func sha1Base64(bytes: UnsafeRawBufferPointer) -> String {
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let ok = digest.withUnsafeMutableBufferPointer { out in
            EVP_Digest(bytes.baseAddress, bytes.count, out.baseAddress, &length, EVP_sha1(), nil)
        }
        precondition(ok == 1 && length == 20, "OpenSSL SHA-1 failed")
        // 20 bytes -> 28 base64 characters plus EVP_EncodeBlock's terminating NUL.
        var encoded = [UInt8](repeating: 0, count: 29)
        let written = encoded.withUnsafeMutableBufferPointer { out in
            digest.withUnsafeBufferPointer { input in
                EVP_EncodeBlock(out.baseAddress, input.baseAddress, Int32(input.count))
            }
        }
        precondition(written == 28, "OpenSSL base64 encoding failed")
        return String(decoding: encoded[0..<28], as: UTF8.self)
    }
}
