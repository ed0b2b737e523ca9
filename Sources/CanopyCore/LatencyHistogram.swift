// LatencyHistogram -- a fixed-bucket histogram of durations, shared across threads, for the Prometheus export.

import Synchronization

/// Counts durations into fixed buckets (seconds), as a Prometheus histogram: cumulative counts per upper bound,
/// a sum and a count.
///
/// Recorded once per commit, sync or publish (not per message), so one `Mutex` per observation is cheap; the
/// scrape copies the state under the same lock.
public final class LatencyHistogram: Sendable {
    /// Upper bounds in seconds, ascending; `+Inf` is implied.
    public let bounds: [Double]
    private let state: Mutex<State>

    /// A snapshot: non-cumulative counts per bucket (one more than `bounds`, the last for `+Inf`), sum, count.
    public struct State: Sendable {
        public var counts: [UInt64]
        public var sum: Double
        public var count: UInt64
    }

    /// Bounds from 100 µs to 10 s, for commits, syncs and publishes.
    public static let defaultBounds: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    public init(bounds: [Double] = LatencyHistogram.defaultBounds) {
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "bounds must ascend")
        self.bounds = bounds
        state = Mutex(State(counts: Array(repeating: 0, count: bounds.count + 1), sum: 0, count: 0))
    }

    /// Records one duration in seconds.
    public func observe(seconds: Double) {
        let index = bounds.firstIndex(where: { seconds <= $0 }) ?? bounds.count
        state.withLock {
            $0.counts[index] += 1
            $0.sum += seconds
            $0.count += 1
        }
    }

    /// Records the time since `start` (from `monotonicNanoseconds()`).
    public func observe(since start: UInt64) {
        let now = monotonicNanoseconds()
        observe(seconds: Double(now &- start) / 1e9)
    }

    /// A copy of the counts.
    public var snapshot: State { state.withLock { $0 } }
}
