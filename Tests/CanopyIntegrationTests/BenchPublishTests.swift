// BenchPublishTests -- `canopy bench publish` on a tiny event: every phase's row is printed, the publish over the
// replay's writes is its own row (it changes nothing, so no socket hears of it), and the incremental rounds reach
// only the sockets of the edited item with nothing stray. Figures are never asserted here.

import Foundation
import Testing

@Suite(.serialized) struct BenchPublishTests {
    /// The whitespace-separated cells of the row whose name starts with `name`.
    private func rows(_ output: String, startingWith name: String) -> [[Substring]] {
        output.split(separator: "\n").filter { $0.hasPrefix(name) }.map { $0.split(separator: " ") }
    }

    @Test(.timeLimit(.minutes(2))) func thePublishAfterTheReplayIsItsOwnRowAndEditsReachOnlyTheirListeners() throws {
        let r = try runCanopy([
            "bench", "publish", "--items", "30", "--attendees", "60", "--tiers", "4", "--groups", "3", "--sockets", "12",
            "--rounds", "2", "--background-writes", "40",
        ])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(rows(r.stdout, startingWith: "atomic publish #").count == 2, "\(r.stdout)")
        #expect(rows(r.stdout, startingWith: "8-write replay #").count == 2, "\(r.stdout)")

        let after = rows(r.stdout, startingWith: "publish after the replay")
        #expect(after.count == 1, "\(r.stdout)")
        // Nothing changes: no listen is affected, no socket receives anything.
        let affected = after.first.flatMap { row in row.firstIndex(of: "subs)").map { row[$0 - 2...$0 - 1] } }
        #expect(affected.map(Array.init) == ["0", "(0"], "affected listens: \(r.stdout)")
        #expect(after.first.map { $0[$0.count - 4] == "0" } == true, "stray subs: \(r.stdout)")

        let edits = rows(r.stdout, startingWith: "incremental (")
        #expect(edits.count == 2, "\(r.stdout)")
        for edit in edits {
            // stray subs and empty-state subs are the fourth and third cells from the end.
            #expect(edit[edit.count - 4] == "0", "stray subs: \(edit)")
            #expect(edit[edit.count - 3] == "0", "empty-state subs: \(edit)")
            #expect(!edit.joined(separator: " ").contains("unconverged"), "\(edit)")
        }
        #expect(rows(r.stdout, startingWith: "incremental median").count == 1, "\(r.stdout)")

        // The event's other traffic went on throughout, and none of it reached a subscriber (stray subs above).
        let background = rows(r.stdout, startingWith: "background writes:")
        #expect(background.count == 1, "\(r.stdout)")
        #expect(background.first.map { Int($0[2]) ?? 0 > 0 && $0.joined(separator: " ").hasSuffix(", 0 failed") } == true)
    }
}
