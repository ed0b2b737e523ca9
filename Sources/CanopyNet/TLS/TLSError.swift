// TLSError -- a failed TLS setup or session: unreadable certificate or key, handshake refused, bad peer certificate.
import CCrypto
import CanopyCore

/// A TLS failure, with OpenSSL's own reason where it gave one.
public enum TLSError: CanopyError, Equatable {
    /// The certificate chain or key file at `path` cannot be read or parsed.
    case unreadableFile(path: String, reason: String)
    /// The key in `keyPath` does not belong to the certificate in `certificatePath`.
    case keyMismatch(certificatePath: String, keyPath: String)
    /// OpenSSL could not build a context (out of memory, a bad cipher list).
    case context(reason: String)
    /// The handshake failed; for a client, `reason` names a refused certificate ("certificate has expired").
    case handshake(reason: String)

    public var code: String { "tls" }

    public var userMessage: String {
        switch self {
        case .unreadableFile(let path, let reason): "cannot load TLS file \(path): \(reason)"
        case .keyMismatch(let certificatePath, let keyPath):
            "the TLS key \(keyPath) does not match the certificate \(certificatePath)"
        case .context(let reason): "cannot set up TLS: \(reason)"
        case .handshake(let reason): "TLS handshake failed: \(reason)"
        }
    }

    /// OpenSSL's queued errors of this thread as one line (and the queue emptied), or `fallback`.
    static func drainErrorQueue(fallback: String) -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &text, text.count)
            // "error:0A000086:SSL routines::certificate verify failed" -> the part after the last colon.
            let line = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            reasons.append(line.split(separator: ":", omittingEmptySubsequences: false).last.map(String.init) ?? line)
        }
        return reasons.isEmpty ? fallback : reasons.joined(separator: "; ")
    }
}
