// PublishRows -- the store rows of an admin action's writes, made by the store's writer while it writes them.
//
// A publish's writes (one per changed location: 5,000 at the `bench publish` defaults) turn into about 12,000 rows.
// Made on the compute thread before the commit, they delayed it by as long as SQLite then took to write them. The
// writer makes them piece by piece instead, the next piece on another core while it writes the one before (see
// `StoreRowSource`). Each piece is a pure function of the trees before and after the action, both immutable: the
// loop goes on with newer trees meanwhile.

import CanopyCore
import CanopyStore

/// The rows of the writes at `paths` that turn `before` into `after`, in write order.
struct PublishRows: StoreRowSource {
    let paths: [Path]
    let before: Node
    let after: Node

    /// Writes per piece: small enough that the writer soon has rows to write, large enough that handing a piece
    /// to another core costs little beside it.
    static let pathsPerPiece = 256

    var pieceCount: Int { (paths.count + Self.pathsPerPiece - 1) / Self.pathsPerPiece }

    /// Two rows a write: a publish replaces each location's value, which is usually an object of a few leaves.
    var estimatedRowCount: Int { paths.count * 2 }

    func rows(ofPiece piece: Int) -> [StoreMutation] {
        let start = piece * Self.pathsPerPiece
        var out: [StoreMutation] = []
        for path in paths[start..<min(paths.count, start + Self.pathsPerPiece)] {
            out += Namespace.mutations(for: path, before: before, after: after)
        }
        return out
    }

    /// Every piece's rows, made now on both cores: for an action committed while its namespace's batches are held
    /// (no file yet, or a reload under way), which the writer cannot take yet.
    func all() -> [StoreMutation] {
        Array(0..<pieceCount).parallelMap(minimumPerChunk: 1) { rows(ofPiece: $0) }.flatMap { $0 }
    }
}
