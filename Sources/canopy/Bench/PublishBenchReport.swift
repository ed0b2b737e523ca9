// PublishBenchReport -- the table `canopy bench publish` prints: one row per strategy, the replay/atomic ratios,
// then the incremental rows.

import Foundation

enum PublishBenchReport {
    /// Prints every round, the medians when there are several rounds, and the replay/atomic ratios.
    static func print(
        atomic: [PublishBenchmark.Row], replay: [PublishBenchmark.Row], afterReplay: PublishBenchmark.Row?,
        incremental: [PublishBenchmark.Row]
    ) {
        var rows = atomic + replay
        var compared = [atomic[0], replay[0]]
        if atomic.count > 1 {
            compared = [median(atomic, "atomic publish median"), median(replay, "8-write replay median")]
            rows += compared
        }
        var after = (afterReplay.map { [$0] } ?? []) + incremental
        if incremental.count > 1 { after.append(median(incremental, "incremental median")) }
        table(rows, compared: (compared[0], compared[1]), after: after)
        Swift.print(
            """
            commit: POST sent → answered (durable); delivered: → the last affected listen holds its final value; \
            server cpu: the daemon's CPU time (all threads) over the phase; bytes/sub: bytes per affected socket; \
            stray subs: sockets with no changed listen that still received something
            """)
    }

    /// A row whose every figure is the median of `rows`' (observation counts from the median commit row).
    private static func median(_ rows: [PublishBenchmark.Row], _ name: String) -> PublishBenchmark.Row {
        func mid<T: Comparable>(_ values: [T]) -> T { values.sorted()[values.count / 2] }
        var out = rows.sorted { $0.commitMilliseconds < $1.commitMilliseconds }[rows.count / 2]
        out.name = name
        out.commitMilliseconds = mid(rows.map(\.commitMilliseconds))
        let delivered = rows.compactMap(\.deliveredMilliseconds)
        out.deliveredMilliseconds = delivered.isEmpty ? nil : mid(delivered)
        let cpu = rows.compactMap(\.serverCPUMilliseconds)
        out.serverCPUMilliseconds = cpu.isEmpty ? nil : mid(cpu)
        return out
    }

    private static func table(
        _ rows: [PublishBenchmark.Row], compared: (PublishBenchmark.Row, PublishBenchmark.Row),
        after: [PublishBenchmark.Row]
    ) {
        let header = [
            "strategy", "writes", "commit ms", "delivered ms", "server cpu ms", "affected listens", "events", "bytes",
            "bytes/sub", "stray subs", "empty-state subs",
        ]
        var table = [header]
        func append(_ row: PublishBenchmark.Row) {
            let o = row.observation
            table.append([
                row.name, "\(row.writes)", format(row.commitMilliseconds),
                row.deliveredMilliseconds.map(format) ?? "-", row.serverCPUMilliseconds.map(format) ?? "-",
                "\(o.affectedListens) (\(o.affectedSockets) subs)", "\(o.events)", "\(o.bytes)",
                "\(o.bytesPerAffectedSocket)", "\(o.unaffectedReceiving)",
                "\(o.emptySockets) (\(o.emptyListens) listens)",
            ])
            if o.unmatchedListens > 0 { table[table.count - 1][3] += " [\(o.unmatchedListens) unconverged]" }
        }
        rows.forEach(append)
        do {
            let (a, b) = compared
            table.append([
                "ratio replay/atomic", ratio(Double(b.writes), Double(a.writes)),
                ratio(b.commitMilliseconds, a.commitMilliseconds),
                ratio(b.deliveredMilliseconds, a.deliveredMilliseconds),
                ratio(b.serverCPUMilliseconds, a.serverCPUMilliseconds), "",
                ratio(Double(b.observation.events), Double(a.observation.events)),
                ratio(Double(b.observation.bytes), Double(a.observation.bytes)), "", "", "",
            ])
        }
        after.forEach(append)
        let widths = header.indices.map { column in table.map { $0[column].count }.max() ?? 0 }
        for line in table {
            let cells = line.enumerated().map { column, cell in
                column == 0 ? cell.padding(toLength: widths[0], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }
            Swift.print(cells.joined(separator: "  "))
        }
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    private static func ratio(_ a: Double?, _ b: Double?) -> String {
        guard let a, let b, b > 0 else { return "-" }
        return String(format: "%.2fx", a / b)
    }
}
