// BenchClusterTests -- `canopy bench cluster` on a tiny scale: 3 nats-server, 3 cluster nodes and a single node
// started by the benchmark itself, its report's rows, ratio, failover and fan-out lines, and nothing left behind.
// Figures are never asserted here: they belong in the benchmark's output and in reports.

import CanopyTestSupport
import Foundation
import Testing

@Suite(.serialized, .enabled(if: NATSTestCluster.binary != nil, "nats-server is not installed"))
struct BenchClusterTests {
    @Test(.timeLimit(.minutes(3))) func reportsDurableWritesFailoverAndEveryAcknowledgedWrite() throws {
        let before = Self.benchDirectories()
        let r = try runCanopy(["bench", "cluster", "--writes", "50", "--clients", "1", "--lease", "2000"])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("benchmark") && $0.contains("writes/s") && $0.contains("cli cores") },
            "\(r.stdout)")
        for label in ["single rest put, 1 conn", "cluster rest put, 1 conn", "cluster via c"] {
            let row = lines.first { $0.hasPrefix(label) }
            // writes/s, p50, p99, server µs/write, nats µs/write (n/a for the single node), client cores.
            #expect(row.map { $0.dropFirst(34).split(separator: " ").count } == 6, "\(r.stdout)")
        }
        #expect(lines.contains { $0.hasPrefix("ratio cluster/single, 1 conn: writes/s ") }, "\(r.stdout)")
        #expect(r.stdout.contains("--lease 2000 ms"), "\(r.stdout)")
        let failover = lines.first { $0.hasPrefix("failover: ") && $0.contains(" ms from the kill to the first write") }
        #expect(failover?.contains("acknowledged by the new owner c") == true, "\(r.stdout)")
        #expect(lines.contains { $0.hasPrefix("every acknowledged write present: ") }, "\(r.stdout)")
        #expect(!r.stdout.contains("MISSING"), "\(r.stdout)")
        #expect(lines.contains { $0.hasPrefix("fan-out spread over 3 nodes vs one node: not measured") },
            "\(r.stdout)")
        // Every child was killed and the temporary directory removed.
        #expect(Self.benchDirectories().subtracting(before).isEmpty)
    }

    @Test func anUnknownOptionIsAUsageError() throws {
        let r = try runCanopy(["bench", "cluster", "--subscribers", "10"])
        #expect(r.status == 64, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stderr.contains("--subscribers"), "\(r.stderr)")
    }

    /// The benchmark's temporary directories that exist now.
    private static func benchDirectories() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []
        return Set(names.filter { $0.hasPrefix("canopy-bench-cluster-") })
    }
}
