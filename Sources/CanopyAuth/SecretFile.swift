// SecretFile -- the daemon's HS256 signing secret: created once with mode 0600, refused if others can read it.
//
// Format: the secret's bytes as unpadded base64url text on one line. Creation is atomic: the
// bytes are written and fsynced into a private temporary file (open O_CREAT|O_EXCL, 0600)
// that is then hard-linked to the final name; link(2) fails if the name exists, so two daemons
// starting at once agree on one secret and nobody ever reads a half-written file.

import CCrypto
import CanopyCore

#if canImport(Glibc)
    import Glibc
#endif

/// Why the secret file could not be loaded or created. Never includes the secret.
public struct SecretFileError: CanopyError, Equatable {
    /// The secret file's path.
    public let path: String
    /// What is wrong, as a fact a user can act on.
    public let reason: String

    public var code: String { "invalid_secret_file" }
    public var userMessage: String { "Signing secret \(path): \(reason)." }
}

/// Loads the daemon's signing secret, creating it on first start.
public enum SecretFile {
    /// Secrets shorter than this (in bytes) are refused as too weak.
    public static let minimumByteCount = 16
    private static let maximumFileBytes = 4096

    /// Returns the secret stored at `path`, creating a random one of `byteCount` bytes first if
    /// the file does not exist.
    ///
    /// - Parameters:
    ///   - path: The file; its directory must exist.
    ///   - byteCount: The size of a newly created secret (at least ``minimumByteCount``).
    /// - Throws: ``SecretFileError`` when the file is group- or world-accessible, is not a regular
    ///   file, does not hold base64url text of at least ``minimumByteCount`` bytes, or on I/O errors.
    public static func loadOrCreate(path: String, byteCount: Int = 32) throws -> [UInt8] {
        precondition(byteCount >= minimumByteCount, "a signing secret needs at least \(minimumByteCount) bytes")
        for _ in 0..<3 {
            if let secret = try load(path: path) { return secret }
            if try create(path: path, byteCount: byteCount) { continue }  // created (or lost a race): read it back
        }
        throw SecretFileError(path: path, reason: "the file keeps disappearing while it is being created")
    }

    /// Reads and checks the file; nil when it does not exist.
    private static func load(path: String) throws(SecretFileError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw failure(path, "cannot open", errno)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw failure(path, "cannot stat", errno) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw SecretFileError(path: path, reason: "not a regular file") }
        guard info.st_mode & 0o077 == 0 else {
            throw SecretFileError(
                path: path,
                reason: "readable or writable by group or others (mode \(octal(info.st_mode & 0o777))); "
                    + "run chmod 600 on it")
        }
        var buffer = [UInt8](repeating: 0, count: maximumFileBytes + 1)
        var length = 0
        while length < buffer.count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + length, $0.count - length) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw failure(path, "cannot read", errno) }
            if n == 0 { break }
            length += n
        }
        guard length <= maximumFileBytes else { throw SecretFileError(path: path, reason: "larger than 4 KiB") }
        var text = buffer[..<length]
        while let last = text.last, last == 0x0A || last == 0x0D || last == 0x20 { text.removeLast() }
        guard !text.contains(UInt8(ascii: "=")),
            let secret = Base64.decode(String(decoding: text, as: UTF8.self), url: true)
        else { throw SecretFileError(path: path, reason: "does not hold unpadded base64url text") }
        guard secret.count >= minimumByteCount else {
            throw SecretFileError(path: path, reason: "holds fewer than \(minimumByteCount) bytes")
        }
        return secret
    }

    /// Creates the file atomically. Returns true when the name now exists (ours or a racer's).
    private static func create(path: String, byteCount: Int) throws(SecretFileError) -> Bool {
        var secret = [UInt8](repeating: 0, count: byteCount)
        guard RAND_bytes(&secret, Int32(byteCount)) == 1 else {
            ERR_clear_error()
            throw SecretFileError(path: path, reason: "the random number generator failed")
        }
        let text = Array((Base64.encode(secret, url: true, padding: false) + "\n").utf8)
        let temporary = path + ".tmp-\(getpid())-\(Base64.encode(randomTag(), url: true, padding: false))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure(path, "cannot create a file in its directory", errno) }
        defer { unlink(temporary) }
        var written = 0
        while written < text.count {
            let n = text.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let code = errno
                close(fd)
                throw failure(path, "cannot write", code)
            }
            written += n
        }
        // fchmod pins the mode even under an unusual umask; fsync makes the bytes durable before the name appears.
        guard fchmod(fd, 0o600) == 0, fsync(fd) == 0 else {
            let code = errno
            close(fd)
            throw failure(path, "cannot sync", code)
        }
        close(fd)
        if link(temporary, path) != 0 && errno != EEXIST { throw failure(path, "cannot create", errno) }
        return true
    }

    private static func randomTag() -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: 6)
        if RAND_bytes(&tag, 6) != 1 { ERR_clear_error() }
        return tag
    }

    private static func failure(_ path: String, _ what: String, _ code: Int32) -> SecretFileError {
        SecretFileError(path: path, reason: "\(what) (\(String(cString: strerror(code))))")
    }

    private static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }
}
