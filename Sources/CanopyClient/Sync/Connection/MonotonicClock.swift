// MonotonicClock -- the injected clock every client timeout, keep-alive and expiry reads.

import CanopyCore

/// A point on a monotonic clock, in nanoseconds from an arbitrary origin (never goes back, ignores wall-clock
/// changes).
struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    var nanoseconds: UInt64

    /// The instant `seconds` later (a negative value is treated as zero).
    func advanced(bySeconds seconds: Double) -> MonotonicInstant {
        // Saturating: a huge or infinite delay is a deadline never reached, not a trap (NaN counts as zero).
        let delay = seconds.isNaN ? 0 : min(max(0, seconds) * 1_000_000_000, Double(UInt64.max / 2))
        let (sum, overflow) = nanoseconds.addingReportingOverflow(UInt64(delay))
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    /// Seconds from `earlier` to this instant (negative when `earlier` is later).
    func seconds(since earlier: MonotonicInstant) -> Double {
        if nanoseconds >= earlier.nanoseconds {
            return Double(nanoseconds - earlier.nanoseconds) / 1_000_000_000
        }
        return -Double(earlier.nanoseconds - nanoseconds) / 1_000_000_000
    }

    static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool { a.nanoseconds < b.nanoseconds }

    var description: String { "\(Double(nanoseconds) / 1_000_000_000)s" }
}

/// Where the client reads the time for its timers. Tests inject a clock they advance by hand.
protocol MonotonicClock: Sendable {
    func now() -> MonotonicInstant
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`).
struct SystemMonotonicClock: MonotonicClock {
    func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: monotonicNanoseconds()) }
}
