// PublicKey+PEM -- loads public keys from PEM text (RFC 7468): SPKI, PKCS#1 RSA, or X.509 certificates.
//
// A PEM file may hold several blocks (identity providers publish rotating certificates).
// Accepted labels: `PUBLIC KEY` (SubjectPublicKeyInfo), `RSA PUBLIC KEY` (PKCS#1) and
// `CERTIFICATE` (the certificate's subject key is used; its validity dates and chain are not
// checked -- the configuration, not the certificate, is the trust anchor). Private keys
// are refused so a secret never ends up in the verifier's configuration by mistake.

import CCrypto

extension PublicKey {
    /// The largest PEM text accepted, in bytes.
    package static let maximumPEMBytes = 1 << 20

    /// Loads every public key in `pem`, in order.
    ///
    /// - Throws: ``JWTError`` of kind `invalidKey` when the text holds no block, a block does not
    ///   decode, a block is not a public key or certificate, or a key is of an unsupported type.
    package static func load(pem: String) throws(JWTError) -> [PublicKey] {
        let text = Array(pem.utf8)
        guard text.count <= maximumPEMBytes else { throw .invalidKey("PEM text is larger than 1 MiB") }
        let expectedBlocks = countOccurrences(of: Array("-----BEGIN ".utf8), in: text)
        guard expectedBlocks > 0 else { throw .invalidKey("no PEM block found") }
        // A memory BIO borrows the bytes without copying, so every block is read inside this closure.
        let blocks: [(String, [UInt8])?] = text.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return [] }
            defer {
                BIO_free(bio)
                ERR_clear_error()
            }
            return (0..<expectedBlocks).map { _ in readBlock(bio) }
        }
        guard blocks.count == expectedBlocks else { throw .invalidKey("cannot read PEM text") }
        var keys: [PublicKey] = []
        for (index, block) in blocks.enumerated() {
            guard let (label, der) = block else { throw .invalidKey("PEM block \(index + 1) does not decode") }
            keys.append(try decode(der: der, label: label, index: index + 1))
        }
        return keys
    }

    private static func readBlock(_ bio: OpaquePointer) -> (String, [UInt8])? {
        var name: UnsafeMutablePointer<CChar>?
        var header: UnsafeMutablePointer<CChar>?
        var data: UnsafeMutablePointer<UInt8>?
        var length = 0
        let ok = PEM_read_bio(bio, &name, &header, &data, &length) == 1
        defer {
            CRYPTO_free(name, nil, 0)
            CRYPTO_free(header, nil, 0)
            CRYPTO_free(data, nil, 0)
        }
        guard ok, let name, let data else { return nil }
        return (String(cString: name), Array(UnsafeBufferPointer(start: data, count: length)))
    }

    private static func decode(der: [UInt8], label: String, index: Int) throws(JWTError) -> PublicKey {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            switch label {
            case "PUBLIC KEY":
                return d2i_PUBKEY(nil, &cursor, buffer.count)
            case "RSA PUBLIC KEY":
                return d2i_PublicKey(EVP_PKEY_RSA, nil, &cursor, buffer.count)
            case "CERTIFICATE":
                guard let certificate = d2i_X509(nil, &cursor, buffer.count) else { return nil }
                defer { X509_free(certificate) }
                return X509_get_pubkey(certificate)  // a new reference, owned by the caller
            default:
                return nil
            }
        }
        guard let key else {
            if label.contains("PRIVATE") {
                throw .invalidKey("PEM block \(index) is a private key; give the public key")
            }
            if !["PUBLIC KEY", "RSA PUBLIC KEY", "CERTIFICATE"].contains(label) {
                throw .invalidKey("PEM block \(index) has unsupported label '\(label)'")
            }
            throw .invalidKey("PEM block \(index) ('\(label)') does not decode")
        }
        return try PublicKey(taking: key)
    }

    private static func countOccurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard haystack.count >= needle.count else { return 0 }
        var count = 0
        var i = 0
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) {
                count += 1
                i += needle.count
            } else {
                i += 1
            }
        }
        return count
    }
}
