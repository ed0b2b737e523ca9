// PublishBenchReport -- the table `canopy bench publish` prints: one row per strategy, then the ratios.

import Foundation

enum PublishBenchReport {
    static func print(_ rows: [PublishBenchmark.Row]) {
        let header = [
            "strategy", "writes", "commit ms", "delivered ms", "affected listens", "events", "bytes",
            "empty-state subs",
        ]
        var table = [header]
        for row in rows {
            let o = row.observation
            table.append([
                row.name, "\(row.writes)", format(row.commitMilliseconds),
                row.deliveredMilliseconds.map(format) ?? "-",
                "\(o.affectedListens) (\(o.affectedSockets) subs)", "\(o.events)", "\(o.bytes)",
                "\(o.emptySockets) (\(o.emptyListens) listens)",
            ])
            if o.unmatchedListens > 0 { table[table.count - 1][3] += " [\(o.unmatchedListens) unconverged]" }
        }
        if rows.count == 2 {
            let (a, b) = (rows[0], rows[1])
            table.append([
                "ratio replay/atomic", ratio(Double(b.writes), Double(a.writes)),
                ratio(b.commitMilliseconds, a.commitMilliseconds),
                ratio(b.deliveredMilliseconds, a.deliveredMilliseconds), "",
                ratio(Double(b.observation.events), Double(a.observation.events)),
                ratio(Double(b.observation.bytes), Double(a.observation.bytes)), "",
            ])
        }
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
