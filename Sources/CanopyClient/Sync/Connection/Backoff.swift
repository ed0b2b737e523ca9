// Backoff -- reconnect delays: exponential growth with jitter, capped, reset after a stable connection.

/// How the client waits between reconnect attempts.
public struct ReconnectPolicy: Sendable, Equatable {
    /// The delay before the first retry, in seconds.
    public var initialDelay: Double
    /// The largest delay, in seconds.
    public var maxDelay: Double
    /// The growth factor per failed attempt.
    public var multiplier: Double
    /// A connection that stayed up this long (seconds) resets the delay to `initialDelay`.
    public var stableAfter: Double

    /// Creates a policy; the defaults follow the Firebase SDKs (1 s, ×1.3, capped at 30 s).
    public init(initialDelay: Double = 1, maxDelay: Double = 30, multiplier: Double = 1.3, stableAfter: Double = 10) {
        precondition(initialDelay > 0 && maxDelay >= initialDelay && multiplier >= 1, "invalid reconnect policy")
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.multiplier = multiplier
        self.stableAfter = stableAfter
    }
}

/// The retry state: a pure value, so the schedule is testable without clocks.
struct Backoff: Sendable {
    let policy: ReconnectPolicy
    private(set) var attempt = 0

    init(policy: ReconnectPolicy) { self.policy = policy }

    /// The delay before the next attempt: the capped exponential base scaled by `0.5 + 0.5 * random`
    /// ("equal jitter"), so clients that lost the server together do not come back together.
    /// - Parameter random: a number in `0..<1`.
    mutating func nextDelay(random: Double) -> Double {
        var base = policy.initialDelay
        var steps = 0
        while steps < attempt && base < policy.maxDelay {
            base *= policy.multiplier
            steps += 1
        }
        base = min(base, policy.maxDelay)
        attempt += 1
        return base * (0.5 + 0.5 * min(max(random, 0), 1))
    }

    /// Called when a connection ends after `connectedSeconds` up: a stable connection starts the schedule over.
    mutating func connectionEnded(afterSeconds connectedSeconds: Double) {
        if connectedSeconds >= policy.stableAfter { attempt = 0 }
    }

    /// Starts the schedule over.
    mutating func reset() { attempt = 0 }
}
