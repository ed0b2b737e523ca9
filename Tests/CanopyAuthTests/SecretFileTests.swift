// SecretFileTests -- creation with mode 0600, reuse, and refusal of exposed or broken files.

import CanopyCore
import Testing

@testable import CanopyAuth

#if canImport(Glibc)
    import Glibc
#endif

@Suite final class SecretFileTests {
    private var directories: [String] = []

    deinit {
        for directory in directories { removeTree(directory) }
    }

    /// A fresh private directory per test, removed when the test ends.
    private func temporaryDirectory() throws -> String {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array((base + "/canopy-auth-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let path = try #require(made.map { String(cString: $0) })
        directories.append(path)
        return path
    }

    private func removeTree(_ directory: String) {
        for name in entries(of: directory) {
            let path = directory + "/" + name
            var info = stat()
            if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR { removeTree(path) } else { unlink(path) }
        }
        rmdir(directory)
    }

    private func mode(of path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    private func write(_ text: String, to path: String, mode: mode_t) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
        _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, mode)
        close(fd)
    }

    private func entries(of directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    @Test func createsOnceWithMode0600AndReusesIt() throws {
        let directory = try temporaryDirectory()
        let path = directory + "/signing.secret"
        let first = try SecretFile.loadOrCreate(path: path)
        #expect(first.count == 32)
        #expect(mode(of: path) == 0o600)
        #expect(entries(of: directory) == ["signing.secret"])  // no temporary file left behind
        let second = try SecretFile.loadOrCreate(path: path)
        #expect(second == first)
        let longer = try SecretFile.loadOrCreate(path: directory + "/other.secret", byteCount: 64)
        #expect(longer.count == 64)
        #expect(longer != first)
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o606] as [mode_t])
    func refusesAFileOthersCanReach(permissions: mode_t) throws {
        let path = try temporaryDirectory() + "/signing.secret"
        write(Base64.encode([UInt8](repeating: 7, count: 32), url: true, padding: false), to: path, mode: permissions)
        #expect(mode(of: path) == permissions)
        #expect(throws: SecretFileError.self) { try SecretFile.loadOrCreate(path: path) }
    }

    @Test func readsAHandWrittenSecret() throws {
        let path = try temporaryDirectory() + "/signing.secret"
        let secret = Array("a hand-made secret of 32 bytes!!".utf8)
        write(Base64.encode(secret, url: true, padding: false) + "\n", to: path, mode: 0o600)
        #expect(try SecretFile.loadOrCreate(path: path) == secret)
    }

    @Test(arguments: ["", "c2hvcnQ", "not base64 at all!", "AAAAAAAAAAAAAAAAAAAAAA==", "++++++++++++++++++++++"])
    func refusesContentThatIsNotAStrongSecret(content: String) throws {
        let path = try temporaryDirectory() + "/signing.secret"
        write(content, to: path, mode: 0o600)
        #expect(throws: SecretFileError.self) { try SecretFile.loadOrCreate(path: path) }
    }

    @Test func refusesADirectoryAndAMissingParent() throws {
        let directory = try temporaryDirectory()
        #expect(throws: SecretFileError.self) { try SecretFile.loadOrCreate(path: directory) }
        #expect(throws: SecretFileError.self) { try SecretFile.loadOrCreate(path: directory + "/missing/secret") }
    }

    @Test func refusesASymlink() throws {
        let directory = try temporaryDirectory()
        let target = directory + "/real.secret"
        _ = try SecretFile.loadOrCreate(path: target)
        #expect(symlink(target, directory + "/link.secret") == 0)
        #expect(throws: SecretFileError.self) { try SecretFile.loadOrCreate(path: directory + "/link.secret") }
    }
}
