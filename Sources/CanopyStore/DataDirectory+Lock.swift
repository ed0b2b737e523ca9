// DataDirectory+Lock -- one process per data directory, enforced with an advisory flock(2).
import Foundation

extension DataDirectory {
    /// The lock file's name inside the directory.
    public static let lockFileName = ".lock"

    /// An exclusive hold on a data directory; released when this object is released (or the process dies).
    ///
    /// Two daemons writing the same SQLite files would each group-commit and keep in-memory trees that
    /// silently diverge; GRDB's rule applies: connect to a database file only once.
    public final class Lock: Sendable {
        private let descriptor: Int32

        fileprivate init(descriptor: Int32) { self.descriptor = descriptor }

        deinit { close(descriptor) }  // closing the descriptor drops the flock
    }

    /// Takes the directory's exclusive lock (`flock(LOCK_EX | LOCK_NB)` on `<directory>/.lock`).
    ///
    /// - Returns: the lock; keep it for as long as the stores are open.
    /// - Throws: `.directoryInUse` when another process (or another `Lock` in this one) holds it,
    ///   `.fileSystem` when the lock file cannot be opened.
    public func lock() throws(StoreError) -> Lock {
        let lockPath = path + "/" + Self.lockFileName
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StoreError(
                .fileSystem, "cannot open the data directory's lock file (errno \(errno))", location: lockPath)
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            if code == EWOULDBLOCK {
                throw StoreError(.directoryInUse, "another Canopy process is using the data directory", location: path)
            }
            throw StoreError(.fileSystem, "cannot lock the data directory (errno \(code))", location: lockPath)
        }
        return Lock(descriptor: descriptor)
    }
}
