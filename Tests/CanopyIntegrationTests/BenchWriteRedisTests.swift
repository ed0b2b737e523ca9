// BenchWriteRedisTests -- `canopy bench write`'s durable-write rows on a tiny scale: Canopy over REST and over the
// wire protocol, and redis-server with `appendfsync always` when it is installed (else the rows are skipped with the
// reason). Figures are never asserted here: they belong in the benchmark's output and in reports.

import Foundation
import Testing

@Suite(.serialized) struct BenchWriteRedisTests {
    private static var redisInstalled: Bool {
        ["/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"].contains {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    @Test(.timeLimit(.minutes(2))) func durableWriteRowsCompareRESTAndWireWithRedisAtEachConnectionCount() throws {
        let r = try runCanopy(["bench", "write", "--compare-redis", "--writes", "40", "--clients", "3"])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        for count in [1, 3, 50] {
            let conn = count == 1 ? "1 conn" : "\(count) conns"
            #expect(r.stdout.contains("canopy rest put, \(conn)"), "\(r.stdout)")
            #expect(r.stdout.contains("canopy wire p, \(conn)"), "\(r.stdout)")
            if Self.redisInstalled {
                #expect(r.stdout.contains("redis set, \(conn)"), "\(r.stdout)")
                #expect(r.stdout.contains("ratio canopy/redis, \(count) conn: rest put "), "\(r.stdout)")
            }
        }
        if Self.redisInstalled {
            #expect(r.stdout.contains("redis-server --appendonly yes --appendfsync always"), "\(r.stdout)")
            #expect(!r.stdout.contains("redis rows skipped"), "\(r.stdout)")
        } else {
            #expect(r.stdout.contains("redis rows skipped: redis-server is not installed"), "\(r.stdout)")
        }
        #expect(r.stdout.contains("cli cores"), "\(r.stdout)")
        #expect(r.stdout.contains("writes/fsync"), "\(r.stdout)")
        // Group commit is reported from the daemon's own metrics: a Canopy row has a figure, not n/a.
        let wireRow = r.stdout.split(separator: "\n").first { $0.hasPrefix("canopy wire p, 50 conns") }
        #expect(wireRow.map { !$0.hasSuffix("n/a") } == true, "\(r.stdout)")
    }

    @Test(.timeLimit(.minutes(2))) func noRedisKeepsTheCanopyRowsAndSaysWhyRedisIsMissing() throws {
        let r = try runCanopy(["bench", "write", "--compare-redis", "--no-redis", "--writes", "20", "--clients", "2"])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.contains("redis rows skipped: --no-redis"), "\(r.stdout)")
        #expect(r.stdout.contains("canopy wire p, 2 conns"), "\(r.stdout)")
        #expect(!r.stdout.contains("redis set,"), "\(r.stdout)")
        #expect(!r.stdout.contains("ratio canopy/redis"), "\(r.stdout)")
    }

    @Test func compareRedisOverTLSIsAUsageError() throws {
        let usage = try runCanopy(["bench", "write", "--compare-redis", "--tls"])
        #expect(usage.status == 64, "\(usage.stdout)\n\(usage.stderr)")
        #expect(usage.stderr.contains("--compare-redis"), "\(usage.stderr)")
    }
}
