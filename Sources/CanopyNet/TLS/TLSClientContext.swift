// TLSClientContext -- what a client trusts: the system's CA store, or one CA file; peers are always verified.
import CCrypto
import CanopyCore

#if canImport(Glibc)
    import Glibc
#endif

/// Client-side TLS settings: TLS 1.2 or 1.3, the peer's chain verified against trusted CAs and its name (or IP
/// address) checked against the host the client connected to. There is no way to turn verification off.
public final class TLSClientContext: @unchecked Sendable {  // safe: the SSL_CTX is not changed after init
    let context: OpaquePointer

    /// The shared context trusting the system's CA store (Debian: /etc/ssl/certs).
    public static let system: Result<TLSClientContext, TLSError> = Result { () throws(TLSError) in
        try TLSClientContext(caFile: nil)
    }

    /// - Parameter caFile: a PEM file of CA certificates to trust instead of the system store; nil for the system's.
    /// - Throws: ``TLSError/unreadableFile(path:reason:)`` when `caFile` cannot be read or holds no certificate.
    public init(caFile: String?) throws(TLSError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw .context(reason: TLSError.drainErrorQueue(fallback: "SSL_CTX_new failed"))
        }
        self.context = context
        guard ccrypto_ssl_ctx_harden(context) == 1 else {
            throw .context(reason: TLSError.drainErrorQueue(fallback: "cannot restrict protocols"))
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        if let caFile {
            if access(caFile, R_OK) != 0 {
                throw .unreadableFile(path: caFile, reason: String(cString: strerror(errno)))
            }
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                throw .unreadableFile(path: caFile, reason: TLSError.drainErrorQueue(fallback: "no PEM certificate"))
            }
        } else if SSL_CTX_set_default_verify_paths(context) != 1 {
            throw .context(reason: TLSError.drainErrorQueue(fallback: "no system CA store"))
        }
    }

    deinit { SSL_CTX_free(context) }
}
