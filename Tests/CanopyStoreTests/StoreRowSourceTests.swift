// StoreRowSourceTests -- rows a submission leaves to the writer land after its mutations, in piece order, in the
// same transaction: a bad row fails the submission alone and leaves nothing of it.
import CanopyCore
import Foundation
import Synchronization
import Testing

@testable import CanopyStore

/// Rows `prefix/0` … `prefix/(count-1)`, `perPiece` to a piece; the row numbered `bad`, if any, cannot be stored.
private final class NumberedRows: StoreRowSource {
    let prefix: String
    let count: Int
    let perPiece: Int
    let bad: Int?
    /// Pieces asked for, in the order they were (two threads make them; each is made once per attempt).
    let asked = Mutex<[Int]>([])

    init(prefix: String, count: Int, perPiece: Int, bad: Int? = nil) {
        (self.prefix, self.count, self.perPiece, self.bad) = (prefix, count, perPiece, bad)
    }

    var pieceCount: Int { (count + perPiece - 1) / perPiece }
    var estimatedRowCount: Int { count }

    func rows(ofPiece piece: Int) -> [StoreMutation] {
        asked.withLock { $0.append(piece) }
        return (piece * perPiece..<min(count, (piece + 1) * perPiece)).map { number in
            number == bad
                ? .putLeaf(path: [prefix, "\(number)"], value: .double(.nan), priority: nil)
                : leaf("\(prefix)/\(number)", .int(Int64(number)))
        }
    }
}

@Suite struct StoreRowSourceTests {
    let directory = TemporaryDirectory()

    private func submit(
        _ store: NamespaceStore, _ mutations: [StoreMutation], rows: (any StoreRowSource)?
    ) -> () -> Result<UInt64, StoreError> {
        let outcome = Mutex<Result<UInt64, StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        store.submit(mutations, rows: rows) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        return {
            done.wait()
            return outcome.withLock { $0! }
        }
    }

    @Test func rowsLandAfterTheMutationsInPieceOrderInOneRevision() throws {
        let store = try NamespaceStore(path: directory.file(), options: StoreOptions())
        try commit(store, [leaf("list/9", .string("replaced")), leaf("other", .int(1))])
        let source = NumberedRows(prefix: "list", count: 10, perPiece: 3)
        let wait = submit(store, [delete("list")], rows: source)
        #expect(try wait().get() == 2)
        #expect(source.asked.withLock { $0 }.sorted() == [0, 1, 2, 3])
        let expected = (0..<10).map { "/list/\($0)=\($0)" }.sorted() + ["/other=1"]
        #expect(try rows(of: store) == expected)
        store.flushAndClose()
        let reopened = try NamespaceStore(path: directory.file(), options: StoreOptions())
        #expect(try rows(of: reopened) == expected)
        #expect(reopened.revision == 2)
    }

    @Test func aBadRowFailsItsSubmissionAloneAndLeavesNothingOfIt() throws {
        // The first commit waits until the three submissions are queued, so that they form one group.
        let queued = DispatchSemaphore(value: 0)
        let first = Atomic<Bool>(true)
        var options = StoreOptions()
        options.beforeCommit = {
            if first.exchange(false, ordering: .relaxed) { queued.wait() }
        }
        let store = try NamespaceStore(path: directory.file(), options: options)
        let keep = submit(store, [leaf("keep", .int(1))], rows: nil)
        // Three submissions in one group: the middle one's source holds a row that cannot be stored, in its last
        // piece, after rows that could.
        let before = submit(store, [leaf("a", .int(1))], rows: nil)
        let bad = submit(store, [delete("keep")], rows: NumberedRows(prefix: "bad", count: 7, perPiece: 2, bad: 6))
        let after = submit(store, [], rows: NumberedRows(prefix: "good", count: 4, perPiece: 4))
        queued.signal()
        #expect((try? keep().get()) == 1)
        #expect((try? before().get()) == 2)
        #expect { try bad().get() } throws: { ($0 as? StoreError)?.kind == .invalidMutation }
        #expect((try? after().get()) == 3)
        #expect(try rows(of: store) == ["/a=1", "/good/0=0", "/good/1=1", "/good/2=2", "/good/3=3", "/keep=1"])
    }

    @Test func aSourceWithoutPiecesWritesNothingButItsMutations() throws {
        let store = try NamespaceStore(path: directory.file(), options: StoreOptions())
        let wait = submit(store, [leaf("x", .int(1))], rows: NumberedRows(prefix: "none", count: 0, perPiece: 5))
        #expect(try wait().get() == 1)
        #expect(try rows(of: store) == ["/x=1"])
    }
}
