// ClusterBenchmark -- `canopy bench cluster`: durable writes to one namespace through the R3 JetStream log against
// single-node SQLite (`--sync full`), and the failover time when a namespace's owner is `kill -9`ed.
//
// One run starts its own processes (BenchCluster): three nats-server with JetStream, three `canopy serve --cluster`
// nodes of this binary, one `canopy serve --sync full`. Both sides promise the same to a writer, "acknowledged
// means durable", in their own way: a cluster node replies once the write's batch is stored by two of the three
// NATS servers, the single node once SQLite's WAL is fdatasync'd. The writes are the `bench write` durable rows'
// (RESTWriteTarget on ClosedLoopWrites: keep-alive PUTs of the same 40 bytes, one in flight per connection, every
// connection on one event loop), sent to the single node, to the namespace's owner (found by a PUT to c1: its 307,
// or the `X-Canopy-Owner` of its proxied answer) and to another node, which proxies them to the owner
// (`--cluster-rest proxy`, the default). Per connection count the sides take turns at going first. The failover
// round is ClusterFailover's. The fan-out phase (ClusterFanout) starts a fresh cluster whose nodes run with
// `--replicate` and compares listeners spread over the three nodes with the same listeners on one node.

import CanopyCore
import CanopyNet
import Foundation

/// `canopy bench cluster [--writes <n>] [--clients <n>[,<n>...]] [--lease <ms>] [--long-log <n>] [--listeners <n>]
/// [--messages <n>]`.
struct ClusterBenchmark {
    static let usage = """
        canopy bench cluster [--writes <n>] [--clients <n>[,<n>...]] [--lease <ms>] [--long-log <n>] [--listeners <n>]
                             [--messages <n>]
          Starts 3 nats-server with JetStream (from PATH or /usr/sbin; Debian package nats-server), 3 `canopy serve
          --cluster` nodes of this binary and a single-node `canopy serve --sync full`, on loopback ports in a
          temporary directory, all removed at exit. Durable writes to one namespace: REST keep-alive PUTs of a
          small value to the single node, to the namespace's owner and to another node that proxies them to the
          owner, one in flight per connection, <n> per row (default 1000), at each of --clients connection counts
          (default 1,16,50): writes/s, p50/p99, daemon and nats-server CPU per write, client cores, and the
          cluster/single ratios. Then failover: a writer keeps writing while the owner of another namespace is
          killed (kill -9), retrying on the other nodes (following a 307 if one answers with it);
          the ms from the kill to the first write acknowledged by the new owner, with the nodes' --lease (default
          6000), and a check that every acknowledged write is present afterwards (exit 1 if one is missing).
          Then a claim after a long log, on two fresh clusters: --long-log sequential writes (default 5000; 0
          skips it) to one namespace, its owner killed, and the new owner's time to load it, without snapshots
          and with --snapshot-batches a fifth of the log (read from a snapshot, the log after it replayed).
          Then fan-out, on a fresh cluster whose nodes run with --replicate: --listeners (default 1500, at most
          9000; 0 skips the phase) listen on one location, one writer sends --messages acknowledged writes of
          ~100 B (default 1000) to the owner; the listeners all on the single node, all on the owner, then spread
          evenly over the owner and the two replica nodes: deliveries/s, p50/p99, every delivery counted per
          listener (exit 1 unless each listener got each write once and in order), each process's CPU and the
          cluster/single ratio. --listeners × --messages is at most 20,000,000.
        """

    var writes = 1_000
    var clientCounts = [1, 16, 50]
    var lease = 6_000
    var listeners = 1_500
    var messages = 1_000
    var longLog = 5_000
    /// A client core busier than this during a row is reported as saturated: the client bounds the figure.
    static let saturatedCoreShare = 0.9
    static let throughputNamespace = "benchcluster"
    static let failoverNamespace = "benchfailover"

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--writes": writes = try arguments.int(for: option, in: 10...10_000_000)
            case "--lease": lease = try arguments.int(for: option, in: 1_000...600_000)
            case "--clients": clientCounts = try arguments.ints(for: option, in: 1...1_024)
            case "--listeners":
                // All of them on one node in the first round: below the daemons' default --max-connections.
                listeners = try arguments.int(for: option, in: 0...9_000)
                if listeners > 0 && listeners < 3 {
                    throw UsageError(message: "--listeners must be 0 (no fan-out phase) or at least 3 (one per node)")
                }
            case "--messages": messages = try arguments.int(for: option, in: 1...1_000_000)
            case "--long-log": longLog = try arguments.int(for: option, in: 0...1_000_000)
            default: throw .unknownOption(option, command: "bench cluster")
            }
        }
        // A round keeps every delivery's latency (8 bytes each).
        if listeners * messages > Self.maximumDeliveries {
            throw UsageError(
                message: "--listeners × --messages is at most \(Self.maximumDeliveries) deliveries per round "
                    + "(\(listeners) × \(messages) asked)")
        }
    }

    /// Deliveries in one fan-out round at most: their latencies take 8 bytes each.
    static let maximumDeliveries = 20_000_000

    /// Where a row's writes go: the single node, the namespace's owner, or another node that proxies them to it.
    private enum Side: CaseIterable {
        case single, owner, proxy
    }

    /// One row of the durable-write table.
    private struct Row {
        var label: String
        var measurement: BenchCommand.Measurement
        var serverMicrosecondsPerWrite: Double?
        var natsMicrosecondsPerWrite: Double?
        var clientCores: Double
    }

    func run() throws {
        guard let natsServer = FanoutChild.findExecutable("nats-server") else {
            throw CommandFailure(
                "nats-server is not installed (apt-get install nats-server; it is looked for on PATH and in /usr/sbin)")
        }
        FanoutChild.raiseOpenFileLimit(to: max(clientCounts.max() ?? 1, listeners) * 2 + 1_024)
        let failoverMissing = try writesAndFailover(natsServer: natsServer)
        var claimsComplete = true
        if longLog > 0 {
            print("")
            claimsComplete = try ClusterClaim.run(natsServer: natsServer, lease: lease, batches: longLog)
        }
        var exact = true
        if listeners > 0 {
            print("")
            exact = try ClusterFanout.run(
                natsServer: natsServer, lease: lease, listeners: listeners, messages: messages,
                saturatedCoreShare: Self.saturatedCoreShare)
        }
        if failoverMissing > 0 {
            throw CommandFailure("\(failoverMissing) acknowledged writes are missing after the failover")
        }
        if !claimsComplete {
            throw CommandFailure("acknowledged writes are missing after a claim of a long log")
        }
        if !exact {
            throw CommandFailure("a fan-out round did not deliver every write to every listener once, in order")
        }
    }

    /// The durable-write rows and the failover round on a cluster of their own.
    /// - Returns: how many acknowledged writes the failover lost (0 when all are present).
    private func writesAndFailover(natsServer: String) throws -> Int {
        let cluster = try BenchCluster(natsServer: natsServer, lease: lease)
        defer { cluster.stop() }
        let ownerIndex = try cluster.owner(of: Self.throughputNamespace)
        guard let owner = cluster.nodes[ownerIndex], let single = cluster.single else {
            throw CommandFailure("a cluster node exited")
        }
        print(
            "machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; \(Self.version(of: natsServer)) ×3 "
                + "(JetStream, R3 log); 3 canopy serve --cluster nodes (--lease \(lease)) and one canopy serve --sync "
                + "full, all child processes on this machine")
        print(
            "durable writes to one namespace (a reply means durable: cluster once the batch is stored by 2 of 3 "
                + "nats-server, single once SQLite's WAL is fdatasync'd); REST keep-alive PUT of "
                + "\(BenchCommand.durablePayload.utf8.count) B; owner \(BenchCluster.nodeNames[ownerIndex]) (a PUT to c1 "
                + "names it); \(writes) writes per row, one in flight per connection")
        fflush(nil)

        let singleAuth = [("Authorization", "Bearer \(cluster.singleCredential)")]
        let probe = try HTTPClient(host: "127.0.0.1", port: single.port).request(
            "PUT", "/bench/probe.json?ns=\(Self.throughputNamespace)&print=silent", headers: singleAuth,
            body: Array("true".utf8))
        guard (200..<300).contains(probe.status) else {
            throw CommandFailure("the single node answered a PUT with \(probe.status): \(probe.text)")
        }
        let proxyIndex = (ownerIndex + 1) % 3
        guard let proxy = cluster.nodes[proxyIndex] else { throw CommandFailure("a cluster node exited") }
        func measure(_ side: Side, connections: Int, total: Int) throws -> Row {
            let server: FanoutChild
            switch side {
            case .single: server = single
            case .owner: server = owner
            case .proxy: server = proxy
            }
            let target = RESTWriteTarget(
                port: server.port, namespace: Self.throughputNamespace,
                credential: side == .single ? cluster.singleCredential : cluster.credential,
                tag: "\(side)\(connections)-\(total)")
            let natsBefore = Self.cpuSeconds(cluster.nats)
            let ownerBefore = owner.cpuSeconds
            let m = try ClosedLoopWrites.run(connections: connections, total: total, server: server, target: target)
            let natsSeconds = Self.cpuSeconds(cluster.nats).flatMap { end in natsBefore.map { end - $0 } }
            // A proxied row's daemon CPU is the proxying node's (measured by the run) and the owner's.
            let ownerSeconds = side == .proxy ? owner.cpuSeconds.flatMap { end in ownerBefore.map { end - $0 } } : 0
            let conn = connections == 1 ? "1 conn" : "\(connections) conns"
            let label: String
            switch side {
            case .single: label = "single rest put, \(conn)"
            case .owner: label = "cluster rest put, \(conn)"
            case .proxy: label = "cluster via \(BenchCluster.nodeNames[proxyIndex]) proxy, \(conn)"
            }
            let serverSeconds = m.serverCPUSeconds.flatMap { s in ownerSeconds.map { s + $0 } }
            return Row(
                label: label, measurement: m,
                serverMicrosecondsPerWrite: serverSeconds.map { $0 * 1e6 / Double(total) },
                natsMicrosecondsPerWrite: side == .single ? nil : natsSeconds.map { $0 * 1e6 / Double(total) },
                clientCores: m.seconds > 0 ? m.clientCPUSeconds / m.seconds : 0)
        }
        // Warm-up, not reported: connections, statements and the log's stream leader.
        for side in Side.allCases { _ = try measure(side, connections: 1, total: min(writes, 100)) }
        var rows: [[Side: Row]] = []
        for (turn, count) in clientCounts.enumerated() {
            // Each side goes first in turn: on a shared machine one row can run 20% faster or slower than the next.
            var row: [Side: Row] = [:]
            for k in 0..<Side.allCases.count {
                let side = Side.allCases[(turn + k) % Side.allCases.count]
                row[side] = try measure(side, connections: count, total: writes)
            }
            rows.append(row)
        }
        printTable(rows)

        print("")
        let before = min(writes, 100)
        let failover = try cluster.measureFailover(
            namespace: Self.failoverNamespace, before: before, after: before,
            timeoutSeconds: Double(lease) / 1000 + 60)
        print(
            "failover: owner \(failover.killed) of \(Self.failoverNamespace) killed (kill -9) after "
                + "\(failover.acknowledgedBeforeKill) acknowledged writes; --lease \(lease) ms")
        print(
            String(
                format: "failover: %.0f ms from the kill to the first write acknowledged by the new owner %@ "
                    + "(%d attempts failed and %d redirected meanwhile)",
                failover.milliseconds, failover.newOwner, failover.failedAttempts, failover.redirects))
        if failover.missing.isEmpty {
            print(
                "every acknowledged write present: \(failover.acknowledged) of \(failover.acknowledged) "
                    + "(GET from the new owner \(failover.newOwner))")
        } else {
            let sample = failover.missing.prefix(10).map { BenchCluster.failoverKey($0) }.joined(separator: ", ")
            print(
                "MISSING acknowledged writes: \(failover.missing.count) of \(failover.acknowledged) "
                    + "(\(sample)\(failover.missing.count > 10 ? ", …" : ""))")
        }
        return failover.missing.count
    }

    private func printTable(_ rows: [[Side: Row]]) {
        let width = 34
        print(
            "benchmark".padding(toLength: width, withPad: " ", startingAt: 0)
                + "  writes/s    p50 ms    p99 ms  srv us/write  nats us/write  cli cores")
        func figure(_ value: Double?, width: Int) -> String {
            value.map { String(format: "%\(width).1f", $0) } ?? "n/a".leftPadded(to: width)
        }
        let ordered = rows.flatMap { row in Side.allCases.compactMap { row[$0] } }
        for row in ordered {
            let m = row.measurement
            print(
                row.label.padding(toLength: width, withPad: " ", startingAt: 0)
                    + String(format: "%10.0f %9.3f %9.3f  ", m.opsPerSecond, m.p50, m.p99)
                    + figure(row.serverMicrosecondsPerWrite, width: 12) + "  "
                    + figure(row.natsMicrosecondsPerWrite, width: 13) + String(format: "  %9.2f", row.clientCores))
        }
        for (index, row) in rows.enumerated() {
            guard let single = row[.single]?.measurement, let owner = row[.owner]?.measurement,
                let proxy = row[.proxy]?.measurement, single.opsPerSecond > 0
            else { continue }
            print(
                String(
                    format: "ratio cluster/single, %d conn: writes/s %.2f (via proxy %.2f), p50 %.2f (%.2f), "
                        + "p99 %.2f (%.2f)", clientCounts[index],
                    owner.opsPerSecond / single.opsPerSecond, proxy.opsPerSecond / single.opsPerSecond,
                    owner.p50 / max(single.p50, 1e-9), proxy.p50 / max(single.p50, 1e-9),
                    owner.p99 / max(single.p99, 1e-9), proxy.p99 / max(single.p99, 1e-9)))
        }
        print(
            "cluster rest put: to the owner; via proxy: to another node, which forwards each request to the owner "
                + "(--cluster-rest proxy, the default)")
        print(
            "srv us/write: CPU of the canopy daemons written to (the single node; the owner; the proxying node and "
                + "the owner); nats us/write: of the three nats-server; cli cores: this client's CPU over wall time")
        for row in ordered where row.clientCores >= Self.saturatedCoreShare {
            print(
                "note: the benchmark client kept \(String(format: "%.2f", row.clientCores)) cores busy on "
                    + "'\(row.label)': it saturates a core, so the client shares the bound on this figure")
        }
    }

    /// The CPU seconds of `children` together; nil if one cannot be read.
    private static func cpuSeconds(_ children: [FanoutChild]) -> Double? {
        var total = 0.0
        for child in children {
            guard let seconds = child.cpuSeconds else { return nil }
            total += seconds
        }
        return total
    }

    /// `nats-server --version`'s answer (`nats-server: v2.9.10`), or the path when it gives none.
    private static func version(of executable: String) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--version"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        guard (try? process.run()) != nil else { return executable }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let line = text.split(separator: "\n").first.map(String.init) ?? ""
        return line.isEmpty ? executable : line
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
