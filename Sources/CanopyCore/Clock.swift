// Clock -- injected wall-clock time, so protocol logic and token checks are testable.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A source of wall-clock time in milliseconds since the Unix epoch.
public protocol WallClock: Sendable {
    func nowMilliseconds() -> Int64
}

/// The system's real-time clock.
public struct SystemClock: WallClock {
    public init() {}
    public func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

/// Monotonic time in nanoseconds, for timeouts and latency measurement.
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
