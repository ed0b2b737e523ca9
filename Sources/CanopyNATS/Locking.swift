// Locking -- `locked`, a lock scope that keeps a body's typed error.

import Foundation

extension NSLocking {
    /// Runs `body` with the lock held.
    @inline(__always)
    func locked<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
