// SoakBenchTests -- `canopy bench soak` end to end on a tiny scale: its options, its table and its verdict lines.
// (Figures are never asserted here: they belong in the benchmark's own output and in reports.)

import Foundation
import Testing

@Suite struct SoakBenchTests {
    @Test(arguments: ["30x", "0m", "-5", "m"]) func aBadDurationIsAUsageError(duration: String) throws {
        let r = try runCanopy(["bench", "soak", "--duration", duration])
        #expect(r.status == 64 && r.stderr.contains("--duration"))
    }

    @Test(.timeLimit(.minutes(2))) func aShortSoakPrintsItsSamplesAndAVerdict() throws {
        let r = try runCanopy([
            "bench", "soak", "--listeners", "40", "--rooms", "4", "--duration", "6s", "--interval", "2s", "--warmup",
            "2s", "--churn-rate", "10", "--churn-hold", "200", "--write-rate", "20", "--refresh-every", "2s",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("40 steady listeners connected and listening"))
        #expect(r.stdout.contains("baseline") && r.stdout.contains("after churn"))
        for goal in ["RSS drift after warm-up", "descriptors after churn", "threads", "p99 delivery latency end/start"]
        {
            #expect(r.stdout.contains(goal), "missing verdict line: \(goal)")
        }
        #expect(r.stdout.contains("0 failed requests or lost sockets"), "\(r.stdout)")
        #expect(r.stdout.contains("verdict: PASS") || r.stdout.contains("verdict: FAIL"))
    }
}
