// TLSServerContext -- the server's certificate chain and key as an OpenSSL SSL_CTX, reloadable as a whole.
import CCrypto
import CanopyCore

#if canImport(Glibc)
    import Glibc
#endif

/// The TLS settings every accepted connection starts from: a PEM certificate chain and its private key,
/// TLS 1.2 and 1.3 only, ECDHE with AEAD ciphers for 1.2, no renegotiation, no compression.
///
/// Immutable once built; a reload (`SIGHUP`) builds a new context and hands it to ``HTTPServer/tlsContext``.
/// Each session holds a reference on the `SSL_CTX` it was made from, so established connections keep the old
/// certificate while new ones get the new one.
public final class TLSServerContext: @unchecked Sendable {  // safe: the SSL_CTX is not changed after init
    /// The cipher suites offered for TLS 1.2 (TLS 1.3 uses OpenSSL's default AEAD suites).
    public static let tls12Ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20"

    let context: OpaquePointer
    public let certificateFile: String
    public let keyFile: String

    /// Loads `certificateFile` (PEM: the leaf, then any intermediates) and `keyFile` (PEM private key).
    /// - Throws: ``TLSError`` naming the file that is missing, unreadable or does not parse, or a key that does
    ///   not match the certificate.
    public init(certificateFile: String, keyFile: String) throws(TLSError) {
        for path in [certificateFile, keyFile] where access(path, R_OK) != 0 {
            throw .unreadableFile(path: path, reason: String(cString: strerror(errno)))
        }
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw .context(reason: TLSError.drainErrorQueue(fallback: "SSL_CTX_new failed"))
        }
        self.context = context
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        guard ccrypto_ssl_ctx_harden(context) == 1, SSL_CTX_set_cipher_list(context, Self.tls12Ciphers) == 1 else {
            throw .context(reason: TLSError.drainErrorQueue(fallback: "cannot restrict protocols and ciphers"))
        }
        guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
            throw .unreadableFile(
                path: certificateFile, reason: TLSError.drainErrorQueue(fallback: "not a PEM certificate chain"))
        }
        guard SSL_CTX_use_PrivateKey_file(context, keyFile, SSL_FILETYPE_PEM) == 1 else {
            throw .unreadableFile(path: keyFile, reason: TLSError.drainErrorQueue(fallback: "not a PEM private key"))
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            _ = TLSError.drainErrorQueue(fallback: "")
            throw .keyMismatch(certificatePath: certificateFile, keyPath: keyFile)
        }
    }

    deinit { SSL_CTX_free(context) }

    /// The leaf certificate's serial number in hexadecimal (logged on load and reload).
    public var certificateSerial: String {
        guard let hex = ccrypto_ssl_ctx_certificate_serial(context) else { return "?" }
        defer { ccrypto_openssl_free(hex) }
        return String(cString: hex)
    }
}
