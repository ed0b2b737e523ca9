// TLSSession -- one TLS connection over a socket descriptor: handshake, record reads and writes, close_notify.
//
// OpenSSL reads and writes the descriptor itself (SSL_set_fd). On a non-blocking socket every call may stop
// with SSL_ERROR_WANT_READ or WANT_WRITE; both come back as `.wouldBlock`, and `wantsWritable` says whether
// the session waits for room to write (a handshake flight, a TLS 1.3 key update) rather than for input, so the
// caller's event loop can ask for the right readiness. The handshake runs implicitly inside the first reads
// and writes (SSL_set_accept_state / SSL_set_connect_state). Renegotiation is refused by the context.
import CCrypto
import CanopyCore

#if canImport(Glibc)
    import Glibc
#endif

package final class TLSSession {
    /// The TLS record type of a handshake: the first byte a TLS client sends.
    static let handshakeRecordType: UInt8 = 0x16

    private let ssl: OpaquePointer
    private let fd: Int32
    private let isServer: Bool
    /// The last call stopped because the session must write before it can go on.
    package private(set) var wantsWritable = false
    /// Server side: the peer's first byte was not a TLS record (someone spoke plain HTTP to a TLS port).
    package private(set) var sawPlaintext = false
    /// Why the last call failed (`.failed` results), for logs and client errors.
    package private(set) var failureReason = ""
    private var checkedFirstByte = false
    private var isShutDown = false

    /// A server session on the accepted descriptor `fd`, from `context` (which it keeps alive).
    package init(server context: TLSServerContext, fd: Int32) throws(TLSError) {
        guard let ssl = SSL_new(context.context), SSL_set_fd(ssl, fd) == 1 else {
            throw .context(reason: TLSError.drainErrorQueue(fallback: "SSL_new failed"))
        }
        self.ssl = ssl
        self.fd = fd
        self.isServer = true
        SSL_set_accept_state(ssl)
    }

    /// A client session on the connected descriptor `fd` that verifies the peer is `host` (a name or an IP literal).
    package init(client context: TLSClientContext, fd: Int32, host: String) throws(TLSError) {
        guard let ssl = SSL_new(context.context), SSL_set_fd(ssl, fd) == 1 else {
            throw .context(reason: TLSError.drainErrorQueue(fallback: "SSL_new failed"))
        }
        self.ssl = ssl
        self.fd = fd
        self.isServer = false
        self.checkedFirstByte = true
        var address = in6_addr()
        let isIPLiteral = inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
        let verified =
            isIPLiteral
            ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
            : SSL_set1_host(ssl, host) == 1 && ccrypto_ssl_set_server_name(ssl, host) == 1
        guard verified else {
            SSL_free(ssl)
            throw .context(reason: "cannot verify the host name '\(host)'")
        }
        SSL_set_connect_state(ssl)
    }

    deinit { SSL_free(ssl) }

    /// Runs the handshake until it completes or would block (clients call it before their first request).
    package func handshake() -> IOResult {
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            wantsWritable = false
            return .transferred(1)
        }
        return outcome(of: rc)
    }

    /// Reads decrypted bytes into `buffer` (the handshake first, if it has not finished).
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        if !checkedFirstByte {
            switch peekFirstByte() {
            case .transferred: break
            case let other: return other
            }
        }
        ERR_clear_error()
        var count = 0
        let rc = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
        if rc == 1 {
            wantsWritable = false
            return .transferred(count)
        }
        return outcome(of: rc)
    }

    /// Encrypts and writes as much of `bytes` as the socket accepts (partial writes are enabled).
    package func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        guard !bytes.isEmpty else { return .wouldBlock }
        ERR_clear_error()
        var count = 0
        let rc = SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &count)
        if rc == 1 {
            wantsWritable = false
            return .transferred(count)
        }
        return outcome(of: rc)
    }

    /// Decrypted bytes buffered inside OpenSSL that the socket's readiness will not announce.
    package var bufferedBytes: Int { Int(SSL_pending(ssl)) }

    /// Sends close_notify once (best effort; a full send buffer drops it).
    package func shutdown() {
        guard !isShutDown, SSL_is_init_finished(ssl) == 1 else { return }
        isShutDown = true
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// The negotiated protocol, "TLSv1.3" or "TLSv1.2" (tests and logs).
    package var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// Peeks at the first byte without consuming it: a TLS client starts with a handshake record.
    private func peekFirstByte() -> IOResult {
        var byte: UInt8 = 0
        while true {
            let n = recv(fd, &byte, 1, Int32(MSG_PEEK))
            if n == 1 { break }
            if n == 0 { return .endOfFile }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            return .failed(errno: code)
        }
        checkedFirstByte = true
        if byte != Self.handshakeRecordType {
            sawPlaintext = true
            failureReason = "plaintext on a TLS port"
            return .failed(errno: 0)
        }
        return .transferred(1)
    }

    private func outcome(of rc: Int32) -> IOResult {
        let code = SSL_get_error(ssl, rc)
        wantsWritable = false
        switch code {
        case SSL_ERROR_WANT_READ:
            return .wouldBlock
        case SSL_ERROR_WANT_WRITE:
            wantsWritable = true
            return .wouldBlock
        case SSL_ERROR_ZERO_RETURN:
            return .endOfFile  // close_notify
        case SSL_ERROR_SYSCALL:
            let saved = errno
            _ = TLSError.drainErrorQueue(fallback: "")
            if saved == EAGAIN || saved == EWOULDBLOCK { return .wouldBlock }
            // End of file without close_notify: HTTP framing tells truncation apart, as on a plain socket.
            if saved == 0 { return .endOfFile }
            failureReason = String(cString: strerror(saved))
            return .failed(errno: saved)
        default:
            failureReason = describeFailure()
            return .failed(errno: 0)
        }
    }

    /// OpenSSL's reason, with the certificate check's own words when verification refused the peer.
    private func describeFailure() -> String {
        let queued = TLSError.drainErrorQueue(fallback: "protocol error")
        guard !isServer else { return queued }
        let verify = SSL_get_verify_result(ssl)
        guard verify != X509_V_OK else { return queued }
        return "the server's certificate was refused: " + String(cString: X509_verify_cert_error_string(verify))
    }
}
