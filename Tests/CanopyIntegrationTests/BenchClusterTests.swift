// BenchClusterTests -- `canopy bench cluster` on a tiny scale: 3 nats-server, 3 cluster nodes and a single node
// started by the benchmark itself, its report's rows, ratio, failover and fan-out lines (exact delivery counts per
// listener), and nothing left behind.
// Figures are never asserted here: they belong in the benchmark's output and in reports.

import CanopyTestSupport
import Foundation
import Testing

@Suite(.serialized, .enabled(if: NATSTestCluster.binary != nil, "nats-server is not installed"))
struct BenchClusterTests {
    @Test(.timeLimit(.minutes(3))) func reportsDurableWritesFailoverAndEveryAcknowledgedWrite() throws {
        let before = Self.benchDirectories()
        let r = try runCanopy([
            "bench", "cluster", "--writes", "50", "--clients", "1", "--lease", "2000", "--long-log", "30", "--listeners", "12",
            "--messages", "15",
        ])
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
        // The claim round: a log of 30 batches loaded by the new owner without snapshots, then from one.
        let claims = lines.filter { $0.hasPrefix("claim after kill -9, log of 30 batches, ") }
        #expect(claims.count == 2 && claims.allSatisfy { $0.contains("30 of 30 writes present") }, "\(r.stdout)")
        #expect(claims.first?.contains("no snapshots") == true && claims.first?.contains("snapshot at log seq 0,") == true)
        #expect(claims.last?.contains("snapshots every 10 batches") == true && claims.last?.contains("snapshot at log seq 0,") == false,
            "\(r.stdout)")
        // The fan-out phase: 12 listeners × 15 writes = 180 deliveries per round, each listener's in order.
        for label in ["single node, 12 listeners", "cluster, 12 on owner c", "cluster, spread 4 c"] {
            let row = lines.first { $0.hasPrefix(label) }
            #expect(row?.contains(" 180/180 ") == true, "\(r.stdout)")
            #expect(row?.contains("FAILED") == false, "\(r.stdout)")
            let name = row?.components(separatedBy: "  ").first ?? label
            #expect(lines.contains { $0.hasPrefix("cpu '\(name)' over ") && $0.contains(", bench client ") },
                "\(r.stdout)")
        }
        // 12 listeners are 4 on each of the three nodes.
        let spread = lines.first { $0.hasPrefix("cluster, spread ") }.map {
            ($0.components(separatedBy: "  ").first ?? "").dropFirst("cluster, spread ".count)
        }
        let shares = spread?.split(separator: "+") ?? []
        #expect(shares.count == 3 && shares.allSatisfy { $0.hasPrefix("4 c") }, "\(r.stdout)")
        #expect(Set(shares.map { $0.suffix(2) }).count == 3, "\(r.stdout)")
        let fanout = lines.first { $0.hasPrefix("fan-out spread over 3 nodes vs one node: deliveries/s ratio ") }
        #expect(
            fanout?.contains(
                "deliveries single exact 180/180 (0 out of order, 0 unexpected), owner alone exact 180/180 "
                    + "(0 out of order, 0 unexpected), spread exact 180/180 (0 out of order, 0 unexpected)") == true,
            "\(r.stdout)")
        #expect(!r.stdout.contains("not measured"), "\(r.stdout)")
        // Every child was killed and the temporary directory removed.
        #expect(Self.benchDirectories().subtracting(before).isEmpty)
    }

    @Test func anUnknownOptionIsAUsageError() throws {
        let r = try runCanopy(["bench", "cluster", "--subscribers", "10"])
        #expect(r.status == 64, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stderr.contains("--subscribers"), "\(r.stderr)")
    }

    @Test(arguments: [
        ["--listeners", "2"], ["--listeners", "-1"], ["--listeners", "9001"], ["--messages", "0"], ["--messages", "x"],
        ["--listeners", "9000", "--messages", "3000"],
    ])
    func aBadFanoutCountIsAUsageError(_ option: [String]) throws {
        let r = try runCanopy(["bench", "cluster"] + option)
        #expect(r.status == 64, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stderr.contains(option[0]), "\(r.stderr)")
        #expect(!r.stdout.contains("machine:"), "nothing was started: \(r.stdout)")
    }

    /// The benchmark's temporary directories that exist now.
    private static func benchDirectories() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []
        return Set(names.filter { $0.hasPrefix("canopy-bench-cluster-") })
    }
}
