// MonotonicClock -- the time an event loop's timers and every timeout read: the system's, or one moved by hand.
import CanopyCore
import Synchronization

/// A source of monotonic time in nanoseconds, injected into an ``EventLoop``.
///
/// Every deadline in CanopyNet (timers, idle and request timeouts, linger) reads the loop's clock, so a test
/// that injects a ``ManualClock`` decides when time passes instead of sleeping.
public protocol MonotonicClock: AnyObject, Sendable {
    /// Nanoseconds since an arbitrary fixed point; never decreases.
    func nowNanoseconds() -> UInt64
    /// False for a clock that only moves when told to: a loop then sleeps until woken instead of until its
    /// next deadline.
    var advancesOnItsOwn: Bool { get }
    /// Registers `wake`, called (on the advancing thread) whenever the clock is moved by hand, so a loop blocked
    /// in `epoll_wait` runs the timers that became due. Clocks that advance on their own never call it.
    func onAdvance(_ wake: @escaping @Sendable () -> Void)
}

/// The kernel's `CLOCK_MONOTONIC`.
public final class SystemMonotonicClock: MonotonicClock {
    /// The one instance every loop shares unless another clock is injected.
    public static let shared = SystemMonotonicClock()
    private init() {}
    public func nowNanoseconds() -> UInt64 { monotonicNanoseconds() }
    public var advancesOnItsOwn: Bool { true }
    public func onAdvance(_ wake: @escaping @Sendable () -> Void) {}
}

/// A monotonic clock that stands still until ``advance(byMilliseconds:)`` moves it; for tests.
///
/// Advancing wakes every loop that reads the clock, and each runs the timers that became due on its next pass.
/// A loop driven by hand (``EventLoop/runPass()``) fires them when the test runs that pass.
public final class ManualClock: MonotonicClock {
    private struct State {
        var now: UInt64
        var wakes: [@Sendable () -> Void] = []
    }
    private let state: Mutex<State>

    /// Creates a clock reading `startNanoseconds` (non-zero by default, like a real monotonic clock).
    public init(startNanoseconds: UInt64 = 1_000_000_000) {
        state = Mutex(State(now: startNanoseconds))
    }

    public func nowNanoseconds() -> UInt64 { state.withLock { $0.now } }
    public var advancesOnItsOwn: Bool { false }

    public func onAdvance(_ wake: @escaping @Sendable () -> Void) {
        state.withLock { $0.wakes.append(wake) }
    }

    /// Moves the clock forward and wakes the loops that read it. Thread-safe.
    public func advance(byMilliseconds milliseconds: Int64) {
        let wakes = state.withLock { state in
            state.now = state.now.addingSaturated(UInt64(clamping: milliseconds).multipliedSaturated(by: 1_000_000))
            return state.wakes
        }
        for wake in wakes { wake() }
    }
}
