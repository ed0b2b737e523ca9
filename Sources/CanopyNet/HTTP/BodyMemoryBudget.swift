// BodyMemoryBudget -- one cap on the bytes of every request body in flight, whichever connection holds it.
//
// A body is charged from the moment its head is read until the last copy of its request is gone: the declared
// `Content-Length` at once (so ten heads announcing 150 MiB each cannot all start), a chunked body as its chunks
// arrive. A request that does not fit is answered 503 with `Retry-After` and its body is never buffered
// (`HTTPConnection`). WebSocket messages being assembled are charged the same way, from their frame headers.
import Synchronization

/// The bytes of all request bodies in flight together, and their cap. Thread-safe: a charge may be given back
/// on any thread (a request parsed on the compute thread dies there).
public final class BodyMemoryBudget: Sendable {
    /// The most bytes in flight together.
    public let limitBytes: Int
    private let used = Atomic<Int>(0)

    /// Creates a budget of `limitBytes` (positive).
    public init(limitBytes: Int) {
        precondition(limitBytes > 0, "a body memory budget must be positive")
        self.limitBytes = limitBytes
    }

    /// Bytes charged now.
    public var usedBytes: Int { used.load(ordering: .relaxed) }

    /// Charges `bytes` if they fit under the cap.
    /// - Returns: the charge, released when it is deinitialized; nil when the bytes do not fit.
    public func reserve(_ bytes: Int) -> BodyCharge? {
        guard take(bytes) else { return nil }
        return BodyCharge(budget: self, bytes: bytes)
    }

    fileprivate func take(_ bytes: Int) -> Bool {
        guard bytes > 0 else { return true }
        var current = used.load(ordering: .relaxed)
        while true {
            guard bytes <= limitBytes - current else { return false }
            let (exchanged, original) = used.compareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    fileprivate func give(_ bytes: Int) {
        guard bytes > 0 else { return }
        used.subtract(bytes, ordering: .relaxed)
    }
}

/// Bytes taken from a ``BodyMemoryBudget``; given back when the charge is deinitialized (on any thread).
public final class BodyCharge: Sendable {
    private let budget: BodyMemoryBudget
    private let charged: Atomic<Int>

    fileprivate init(budget: BodyMemoryBudget, bytes: Int) {
        self.budget = budget
        self.charged = Atomic(bytes)
    }

    deinit { budget.give(charged.load(ordering: .relaxed)) }

    /// The bytes charged.
    public var bytes: Int { charged.load(ordering: .relaxed) }

    /// Lowers the charge to `total` bytes (part of what it covered was let go).
    public func shrink(to total: Int) {
        let extra = bytes - max(total, 0)
        guard extra > 0 else { return }
        charged.subtract(extra, ordering: .relaxed)
        budget.give(extra)
    }

    /// Raises the charge to `total` bytes (a chunked body grew) if that fits under the cap.
    /// - Returns: false, with the charge unchanged, when it does not fit.
    public func grow(to total: Int) -> Bool {
        let extra = total - bytes
        guard extra > 0 else { return true }
        guard budget.take(extra) else { return false }
        charged.add(extra, ordering: .relaxed)
        return true
    }
}
