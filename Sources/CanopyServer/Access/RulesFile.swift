// RulesFile -- a rules file on disk (`--rules`, a namespace's saved `<ns>.rules.json`): read and compiled failing
// closed, written atomically and durably.
//
// A rules file that is there but cannot be read or compiled is an error, never "no rules": the caller refuses to
// start (`--rules`) or refuses the namespace's service (saved rules) rather than fall back to other rules. Only
// nothing at all at the path (not even a dangling link) means a namespace has no rules of its own.

import CanopyCore
import CanopyRules

#if canImport(Glibc)
    import Glibc
#endif

/// Why a rules file could not be read, compiled or saved. Carries the file and the system's or the compiler's
/// reason, never the rules text.
public struct RulesFileError: CanopyError {
    public enum Problem: Sendable {
        /// The file cannot be opened or read (`reason` is the system's message, e.g. "Is a directory").
        case unreadable
        /// The file was read but is not valid rules (`reason` is the compiler's message).
        case invalid
        /// New rules could not be written (a full disk, a read-only file system, …).
        case notSaved
    }

    public let problem: Problem
    /// The rules file's path.
    public let file: String
    public let reason: String

    public var code: String {
        switch problem {
        case .unreadable: "rules_unreadable"
        case .invalid: "rules_invalid"
        case .notSaved: "rules_not_saved"
        }
    }

    public var userMessage: String {
        switch problem {
        case .unreadable: "rules file '\(file)' cannot be read: \(reason)"
        case .invalid: "rules file '\(file)' is invalid: \(reason)"
        case .notSaved: "rules file '\(file)' could not be saved: \(reason)"
        }
    }
}

/// A rules file at `path`.
struct RulesFile {
    let path: String

    /// Whether nothing is at the path, not even a dangling link. A path that cannot be checked counts as taken:
    /// `load()` then reports why.
    var isAbsent: Bool {
        var info = stat()
        return lstat(path, &info) != 0 && errno == ENOENT
    }

    /// Reads and compiles the file.
    ///
    /// - Throws: `.unreadable` (a missing file included) or `.invalid`.
    func load() throws(RulesFileError) -> (source: String, rules: CompiledRules) {
        let source: String
        do {
            source = try readFileContents(path)
        } catch {
            throw RulesFileError(problem: .unreadable, file: path, reason: error.reason)
        }
        do {
            return (source, try CompiledRules.compile(source: source))
        } catch {
            throw RulesFileError(problem: .invalid, file: path, reason: error.userMessage)
        }
    }

    /// Replaces the file with `source`: written and synced under `<path>.tmp`, then renamed over it, so a reader
    /// (or a restart after a crash) sees the old rules or the new ones, never part of a file.
    ///
    /// - Throws: `.notSaved` when any step fails; the old file is then untouched.
    func save(_ source: String) throws(RulesFileError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure(errno) }
        let bytes = Array(source.utf8)
        var written = 0
        var code: Int32 = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                code = n < 0 ? errno : ENOSPC
                break
            }
            written += n
        }
        if code == 0 && fsync(fd) != 0 { code = errno }
        if close(fd) != 0 && code == 0 { code = errno }
        if code == 0 && rename(temporary, path) != 0 { code = errno }
        guard code == 0 else {
            unlink(temporary)
            throw failure(code)
        }
        // The rename is durable once the directory is synced. If that fails the new rules are in place (and in
        // force) but might not survive a power loss; nothing is gained by refusing them now.
        let directory = open(parentDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            _ = fsync(directory)
            close(directory)
        }
    }

    private var parentDirectory: String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private func failure(_ code: Int32) -> RulesFileError {
        RulesFileError(problem: .notSaved, file: path, reason: String(cString: strerror(code)))
    }
}
