// ClusterConfigTests -- `canopy_cluster/config` against real processes: the first node stores the lease, the log
// stream count and the replica count; a node started with another `--lease` refuses to join (exit status 1, the
// message names both), and one started without `--lease` runs with the cluster's.

import CanopyCore
import CanopyNet
import CanopyTestSupport
import Foundation
import Testing

@Suite(.serialized, .enabled(if: NATSTestCluster.binary != nil, "nats-server is not installed"))
struct ClusterConfigTests {
    @Test(.timeLimit(.minutes(2)))
    func aNodeWithAnotherLeaseRefusesToJoinAndOneWithoutTakesTheClusters() throws {
        let cluster = try CanopyCluster(count: 1, lease: 3000)
        defer { cluster.stop() }
        #expect(cluster.log(0).contains("lease_ms=3000"))
        let directory = makeTemporaryDirectory()
        let port = try freeLoopbackPort()
        let join = [
            "serve", "--port", "\(port)", "--data", directory, "--cluster", cluster.nats.urls, "--node", "late",
            "--advertise", "http://127.0.0.1:\(port)",
        ]
        let refused = try runCanopy(join + ["--lease", "5000"])
        #expect(refused.status != 0)
        #expect(
            refused.stderr.contains("lease 5000 ms") && refused.stderr.contains("lease 3000 ms")
                && refused.stderr.contains("canopy_cluster/config"), "\(refused.stderr)")

        let log = directory + "/late.log"
        let adopted = try ServerProcess(
            dataDirectory: directory, extraArguments: Array(join.dropFirst(5)), logFile: log,
            baseArguments: ["--port", "\(port)", "--data", directory, "--log-level", "notice"])
        defer { adopted.kill9() }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(text.contains("event=cluster.joined") && text.contains("lease_ms=3000"), "\(text)")
    }
}
