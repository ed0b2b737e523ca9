// ClusterClaim -- `canopy bench cluster`'s claim round: how long a new owner takes to load a namespace with a long
// log after `kill -9` of its owner, with snapshots (the log trimmed below them) and without.
//
// Each side is a fresh cluster (its nodes with `--snapshot-batches 0 --snapshot-log-mib 0`, or with
// `--snapshot-batches` a fifth of the log): `--long-log` sequential PUTs to the owner (each one batch, one log
// message), then ClusterFailover's round on the same namespace. The load time is the new owner's own
// (`load_ms` of its `cluster.claimed` line: the snapshot read and checked, the log after it replayed, the takeover
// marker stored); the kill-to-first-write time adds the lease. Every long-log write must be there afterwards.

import CanopyCore
import CanopyNet
import Foundation

enum ClusterClaim {
    static let namespace = "benchlonglog"

    /// Runs both sides and prints a line for each. Returns whether every acknowledged write was found.
    static func run(natsServer: String, lease: Int, batches: Int) throws -> Bool {
        let interval = max(10, batches / 5)
        var complete = true
        for snapshots in [false, true] {
            let options =
                snapshots
                ? ["--snapshot-batches", "\(interval)"] : ["--snapshot-batches", "0", "--snapshot-log-mib", "0"]
            let cluster = try BenchCluster(
                natsServer: natsServer, lease: lease, nodeArguments: options, nodeLogLevel: "notice")
            defer { cluster.stop() }
            let owner = try cluster.owner(of: namespace)
            let client = HTTPClient(host: "127.0.0.1", port: cluster.nodePorts[owner], timeoutSeconds: 30)
            defer { client.close() }
            let value = "\"" + String(repeating: "x", count: 96) + "\""
            for item in 0..<batches {
                let response = try client.request(
                    "PUT", "/long/l\(item).json?ns=\(namespace)&print=silent", headers: cluster.authorization,
                    body: Array(value.utf8))
                guard (200..<300).contains(response.status) else {
                    throw CommandFailure("a long-log PUT was answered \(response.status): \(response.text)")
                }
            }
            let failover = try cluster.measureFailover(
                namespace: namespace, before: 5, after: 5, timeoutSeconds: Double(lease) / 1000 + 60)
            let claimed = lastLine(cluster, node: failover.newOwner, event: "cluster.claimed")
            // The killed owner's last snapshot: its size and the time it took off the loop.
            let snapshot = lastLine(cluster, node: failover.killed, event: "cluster.snapshot")
            let survivor = BenchCluster.nodeNames.firstIndex(of: failover.newOwner) ?? (owner + 1) % 3
            let (response, _) = try cluster.request(
                "GET", "/long.json?ns=\(namespace)&shallow=true", via: cluster.nodePorts[survivor], timeoutSeconds: 30)
            let present = (try? JSONValue.parse(response.body))?.members?.count ?? 0
            complete = complete && present == batches && failover.missing.isEmpty
            let side = snapshots ? "snapshots every \(interval) batches" : "no snapshots"
            print(
                "claim after kill -9, log of \(batches) batches, \(side): new owner \(failover.newOwner) loaded in "
                    + "\(claimed["load_ms"] ?? "?") ms (from the snapshot at log seq \(claimed["snapshot_seq"] ?? "?"), "
                    + "\(claimed["replayed"] ?? "?") log messages replayed); "
                    + String(format: "%.0f", failover.milliseconds) + " ms from the kill to its first write; "
                    + "\(present) of \(batches) writes present"
                    + (snapshots
                        ? "; the former owner's last snapshot: \(snapshot["bytes"] ?? "?") B in \(snapshot["chunks"] ?? "?") "
                            + "chunks, encoded in \(snapshot["encode_ms"] ?? "?") ms and published in "
                            + "\(snapshot["publish_ms"] ?? "?") ms on its snapshot queue" : ""))
            fflush(nil)
        }
        return complete
    }

    /// The fields of the last `event` line for the namespace in `node`'s log.
    private static func lastLine(_ cluster: BenchCluster, node: String, event: String) -> [String: String] {
        let text = (try? String(contentsOfFile: cluster.directory + "/\(node).log", encoding: .utf8)) ?? ""
        guard
            let line = text.split(separator: "\n").last(where: {
                $0.contains("event=\(event) ") && $0.contains(" ns=\(namespace)")
            })
        else { return [:] }
        var fields: [String: String] = [:]
        for field in line.split(separator: " ") {
            guard let equals = field.firstIndex(of: "=") else { continue }
            fields[String(field[..<equals])] = String(field[field.index(after: equals)...])
        }
        return fields
    }
}
