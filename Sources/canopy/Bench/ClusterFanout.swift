// ClusterFanout -- the fan-out phase of `canopy bench cluster`: N listeners on one location of one namespace, one
// writer, on the single node, on the cluster owner alone, and spread evenly over the owner and two replica nodes.
//
// The listeners and the writer are `bench fanout`'s Firebase wire-protocol clients (FanoutCanopyTransport on one
// FanoutRound: every socket on one event loop of this process, no thread per listener). The writer sends `p` of
// `/room/m<seq>` with a padded ~100 B payload to the namespace's owner (or the single node), acknowledged, a few
// writes in flight; every listener `q`-listens on `/room` on its node. The accounting is exact: FanoutTracker with
// per-subscriber order checks counts a delivery only when it is the listener's next write, so "delivered" equal to
// "expected" with no unexpected or out-of-order event means every listener got every write once, in order.
// The CPU of every child (from /proc) and of this process is read when the last listener listens and when the
// last delivery arrives.

import CanopyCore
import CanopyNet
import Foundation

/// One round of the fan-out phase and its figures.
struct ClusterFanoutRow {
    var label: String
    var result: FanoutResult
    var outOfOrder: Int
    var unexpected: Int
    /// Why the round stopped early, if it did.
    var failure: String?
    /// CPU seconds per child (name, seconds) while the writes ran.
    var childSeconds: [(String, Double)]
    var clientSeconds: Double
    var wallSeconds: Double

    var isExact: Bool {
        failure == nil && outOfOrder == 0 && unexpected == 0 && result.delivered == result.expected
    }
    var clientCores: Double { wallSeconds > 0 ? clientSeconds / wallSeconds : 0 }
}

enum ClusterFanout {
    /// Writes in flight: enough that the writer is not bound by one round trip through the log per write (at 8,
    /// 1,500 listeners got 0.93M deliveries/s from the single node, at 32 2.2M, on this 2-core machine).
    static let writesInFlight = 32
    /// The payload's padding: `{"seq":…,"sentAt":…,"text":"…"}` comes to about 100 bytes.
    static let padding = String(repeating: "x", count: 56)

    /// The size of a typical write's payload in bytes.
    static var payloadBytes: Int {
        FanoutPayload.json(seq: 100, sentAt: monotonicNanoseconds(), text: padding).utf8.count
    }

    /// Runs one round: `listeners` listeners on `listenerPorts` in turn, the writer on `writerPort`.
    /// - Parameters:
    ///   - children: the processes whose CPU is reported, by name.
    static func round(
        label: String, namespace: String, credential: String, writerPort: Int, listenerPorts: [Int],
        listeners: Int, messages: Int, children: [(String, FanoutChild)]
    ) throws -> ClusterFanoutRow {
        let loop = try EventLoop()
        let transport = FanoutCanopyTransport(
            loop: loop, host: "127.0.0.1", port: writerPort, subscriberPorts: listenerPorts,
            namespace: namespace,
            credential: credential)
        let tracker = FanoutTracker(
            writes: messages, deliveriesPerWrite: listeners,
            maxEventsInFlight: writesInFlight * listeners,
            orderedSubscribers: listeners)
        typealias Sample = (client: Double, children: [Double?], wallNs: UInt64)
        func sample() -> Sample {
            (FanoutChild.ownCPUSeconds(), children.map { $0.1.cpuSeconds }, monotonicNanoseconds())
        }
        var start: Sample?
        var end: Sample?
        let round = FanoutRound(
            loop: loop, transport: transport, subscribers: listeners, spread: false, tracker: tracker,
            onListening: { start = sample() }, onFinished: { end = sample() })
        round.payloadText = padding
        round.run()
        let result = tracker.result(label: label, rssPerConnectionKiB: nil, note: round.failure)
        var childSeconds: [(String, Double)] = []
        var clientSeconds = 0.0
        var wallSeconds = 0.0
        if let start, let end {
            for (index, child) in children.enumerated() {
                if let a = start.children[index], let b = end.children[index] {
                    childSeconds.append((child.0, b - a))
                }
            }
            clientSeconds = end.client - start.client
            wallSeconds = Double(end.wallNs &- start.wallNs) / 1e9
        }
        return ClusterFanoutRow(
            label: label, result: result, outOfOrder: tracker.outOfOrder, unexpected: tracker.unexpected,
            failure: round.failure, childSeconds: childSeconds, clientSeconds: clientSeconds,
            wallSeconds: wallSeconds)
    }

    /// The phase: a cluster of three `--replicate` nodes and a single node of its own, three rounds, the table.
    /// - Returns: false when a round's deliveries were not exact.
    static func run(
        natsServer: String, lease: Int, listeners: Int, messages: Int, saturatedCoreShare: Double
    ) throws -> Bool {
        let cluster = try BenchCluster(natsServer: natsServer, lease: lease, replicate: true)
        defer { cluster.stop() }
        guard let single = cluster.single else { throw CommandFailure("the single node exited") }
        let names = BenchCluster.nodeNames
        func clusterChildren() -> [(String, FanoutChild)] {
            let nodes = cluster.nodes.enumerated().compactMap { index, node in
                node.map { (names[index], $0) }
            }
            return nodes + cluster.nats.map { ($0.name, $0) }
        }
        print(
            "fan-out: \(listeners) listeners on /room of one namespace, one writer (Firebase wire protocol, "
                + "acknowledged p of /room/m<seq>, \(payloadBytes) B payload, \(writesInFlight) writes in flight), "
                + "\(messages) messages; cluster nodes with --replicate (a replica node serves listens from "
                + "the log)")
        fflush(nil)
        var rows: [ClusterFanoutRow] = []
        rows.append(
            try round(
                label: "single node, \(listeners) listeners", namespace: "fanout-single",
                credential: cluster.singleCredential, writerPort: single.port, listenerPorts: [single.port],
                listeners: listeners, messages: messages, children: [("single", single)]))
        let ownerNamespace = "fanout-owner"
        let alone = try cluster.owner(of: ownerNamespace)
        rows.append(
            try round(
                label: "cluster, \(listeners) on owner \(names[alone])", namespace: ownerNamespace,
                credential: cluster.credential, writerPort: cluster.nodePorts[alone],
                listenerPorts: [cluster.nodePorts[alone]], listeners: listeners, messages: messages,
                children: clusterChildren()))
        let spreadNamespace = "fanout-spread"
        let owner = try cluster.owner(of: spreadNamespace)
        let order = [owner, (owner + 1) % 3, (owner + 2) % 3]
        let shares = order.indices.map { k in listeners / 3 + (k < listeners % 3 ? 1 : 0) }
        rows.append(
            try round(
                label: "cluster, spread "
                    + zip(shares, order).map { "\($0) \(names[$1])" }.joined(separator: "+"),
                namespace: spreadNamespace, credential: cluster.credential,
                writerPort: cluster.nodePorts[owner],
                listenerPorts: order.map { cluster.nodePorts[$0] }, listeners: listeners,
                messages: messages,
                children: clusterChildren()))
        printTable(rows, owner: names[owner], saturatedCoreShare: saturatedCoreShare)
        return rows.allSatisfy(\.isExact)
    }

    private static func printTable(
        _ rows: [ClusterFanoutRow], owner: String, saturatedCoreShare: Double
    ) {
        let width = 40
        print(
            "fan-out".padding(toLength: width, withPad: " ", startingAt: 0)
                + "  deliveries/s    p50 ms    p99 ms  delivered/expected  cli cores")
        for row in rows {
            let r = row.result
            print(
                row.label.padding(toLength: width, withPad: " ", startingAt: 0)
                    + String(format: "%14.0f %9.2f %9.2f  ", r.eventsPerSecond, r.p50, r.p99)
                    + "\(r.delivered)/\(r.expected)".leftPadded(to: 18)
                    + String(format: "  %9.2f", row.clientCores)
                    + (row.failure.map { "  FAILED: \($0)" } ?? ""))
        }
        for row in rows {
            let figures = row.childSeconds.map { name, seconds in
                String(
                    format: "%@ %.2f s (%.2f cores)", name, seconds,
                    row.wallSeconds > 0 ? seconds / row.wallSeconds : 0)
            }
            print(
                "cpu '\(row.label)' over \(String(format: "%.2f", row.wallSeconds)) s: "
                    + (figures + [
                        String(format: "bench client %.2f s (%.2f cores)", row.clientSeconds, row.clientCores)
                    ])
                    .joined(separator: ", "))
        }
        for row in rows where row.clientCores >= saturatedCoreShare {
            print(
                "note: the bench client kept \(String(format: "%.2f", row.clientCores)) cores busy on "
                    + "'\(row.label)': it saturated its core, so this figure measures the client, not the daemons"
            )
        }
        guard rows.count == 3 else { return }
        let (single, alone, spread) = (rows[0].result, rows[1].result, rows[2].result)
        func ratio(_ a: FanoutResult, _ b: FanoutResult) -> String {
            b.eventsPerSecond > 0 ? String(format: "%.2f", a.eventsPerSecond / b.eventsPerSecond) : "n/a"
        }
        let exact = rows.map { row in
            "\(row.isExact ? "exact" : "INEXACT") \(row.result.delivered)/\(row.result.expected)"
                + " (\(row.outOfOrder) out of order, \(row.unexpected) unexpected)"
        }
        print(
            "fan-out spread over 3 nodes vs one node: deliveries/s ratio cluster/single \(ratio(spread, single)), "
                + "spread/owner alone \(ratio(spread, alone)); deliveries single \(exact[0]), owner alone "
                + "\(exact[1]), spread \(exact[2]); owner \(owner)")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
