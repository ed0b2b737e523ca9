// BackoffTests -- reconnect delays grow exponentially with jitter, cap, and reset after a stable connection.

import Testing

@testable import CanopyClient

@Suite struct BackoffTests {
    let policy = ReconnectPolicy(initialDelay: 1, maxDelay: 30, multiplier: 2, stableAfter: 10)

    @Test func growsExponentiallyUpToTheCap() {
        var backoff = Backoff(policy: policy)
        let delays = (0..<8).map { _ in backoff.nextDelay(random: 1) }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30, 30])
    }

    @Test(arguments: [0.0, 0.25, 0.5, 0.999])
    func jitterStaysBetweenHalfAndFullDelay(random: Double) {
        var backoff = Backoff(policy: policy)
        for step in 0..<7 {
            let base = min(30, Double(1 << step))
            let delay = backoff.nextDelay(random: random)
            #expect(delay >= base / 2 && delay <= base)
            #expect(abs(delay - base * (0.5 + 0.5 * random)) < 1e-9)
        }
    }

    @Test func onlyAStableConnectionResetsTheSchedule() {
        var backoff = Backoff(policy: policy)
        _ = backoff.nextDelay(random: 1)
        _ = backoff.nextDelay(random: 1)
        backoff.connectionEnded(afterSeconds: 3)
        #expect(backoff.nextDelay(random: 1) == 4)
        backoff.connectionEnded(afterSeconds: 12)
        #expect(backoff.nextDelay(random: 1) == 1)
    }
}
