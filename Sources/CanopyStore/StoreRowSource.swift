// StoreRowSource -- rows a submission leaves to the writer thread to make, piece by piece, while it writes them.
//
// A publish writes below thousands of attendees: 5,000 locations and 12,000 rows at the `bench publish` defaults.
// Its rows are a pure function of the trees before and after it. Made on both cores before the commit and written
// after, they took 20 ms, then SQLite 30. Left to the writer, the two overlap: a helper on the other core makes the
// pieces in order while the writer writes those made, and the writer makes a piece itself whenever it would
// otherwise wait (`RowPieces`).

import CanopyCore
import Dispatch
import Synchronization

/// Rows made on demand, in pieces, in the order they must be written. Pure: asked again (a group retried with
/// savepoints), a piece gives the same rows.
public protocol StoreRowSource: Sendable {
    /// How many pieces there are.
    var pieceCount: Int { get }
    /// About how many rows all pieces hold (a transaction is cut after `maximumMutationsPerTransaction` rows).
    var estimatedRowCount: Int { get }
    /// The rows of piece `piece` (0..<pieceCount).
    func rows(ofPiece piece: Int) -> [StoreMutation]
}

/// The pieces of one source, made by whichever of two threads comes to each first: a helper makes them in order
/// (`makeAll`), the writer takes them in order (`take`) and makes a piece itself when nobody has started it yet.
/// Each piece is made once. Thread-safe.
final class RowPieces: Sendable {
    private struct State {
        /// The first piece nobody has started to make.
        var nextUnclaimed = 0
        /// Pieces made and not yet taken, by number.
        var made: [Int: [StoreMutation]] = [:]
        /// Set once the writer is done: the helper stops claiming.
        var isStopped = false
    }

    private let source: any StoreRowSource
    private let state = Mutex(State())
    /// Signalled each time the helper has made a piece.
    private let madeOne = DispatchSemaphore(value: 0)
    let count: Int

    init(_ source: any StoreRowSource) {
        self.source = source
        count = source.pieceCount
    }

    /// Makes unclaimed pieces in order until none is left or the writer stops (the helper).
    func makeAll() {
        while let piece = claim() {
            let rows = source.rows(ofPiece: piece)
            state.withLock { $0.made[piece] = rows }
            madeOne.signal()
        }
    }

    /// Piece `piece`'s rows (the writer, in order): made here when nobody has started it, else waited for.
    func take(_ piece: Int) -> [StoreMutation] {
        while true {
            enum Next { case rows([StoreMutation]), make, wait }
            let next: Next = state.withLock { state in
                if let rows = state.made.removeValue(forKey: piece) { return .rows(rows) }
                if state.nextUnclaimed == piece {
                    state.nextUnclaimed += 1
                    return .make
                }
                return .wait
            }
            switch next {
            case .rows(let rows): return rows
            case .make: return source.rows(ofPiece: piece)
            case .wait: madeOne.wait()
            }
        }
    }

    /// Tells the helper to claim no more pieces (the writer is done, or failed).
    func stop() {
        state.withLock { $0.isStopped = true }
    }

    private func claim() -> Int? {
        state.withLock { state in
            guard !state.isStopped, state.nextUnclaimed < count else { return nil }
            defer { state.nextUnclaimed += 1 }
            return state.nextUnclaimed
        }
    }
}
