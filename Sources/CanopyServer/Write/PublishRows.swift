// PublishRows -- the store rows of an admin action's writes, made by the store's writer while it writes them.
//
// A publish's writes (one per changed location: 5,000 at the `bench publish` defaults) turn into about 12,000 rows.
// Made on the compute thread before the commit, they delayed it by as long as SQLite then took to write them. The
// writer makes them piece by piece instead, the next piece on another core while it writes the one before (see
// `StoreRowSource`). Each piece is a pure function of the trees before and after the action, both immutable: the
// loop goes on with newer trees meanwhile.
//
// Most rows can be made earlier still (`EarlyPublishRows`): as soon as the writes are known, from the tree before
// and the written nodes alone, while the compute thread makes the new tree and the loop commits it. The writer
// then finds them made (Architecture.md#Rows-made-before-the-commit).

import CanopyCore
import CanopyStore
import Dispatch
import Synchronization

/// The rows of the writes at `paths` that turn `before` into `after`, in write order.
struct PublishRows: StoreRowSource {
    let paths: [Path]
    let before: Node
    let after: Node
    /// Rows made from `before` while the new tree was made, when `early.before` is `before`; nil otherwise.
    let early: EarlyPublishRows?

    init(paths: [Path], before: Node, after: Node, early: EarlyPublishRows? = nil) {
        self.paths = paths
        self.before = before
        self.after = after
        self.early = early
    }

    /// Writes per piece: small enough that the writer soon has rows to write, large enough that handing a piece
    /// to another core costs little beside it.
    static let pathsPerPiece = 256

    var pieceCount: Int { (paths.count + Self.pathsPerPiece - 1) / Self.pathsPerPiece }

    /// Two rows a write: a publish replaces each location's value, which is usually an object of a few leaves.
    var estimatedRowCount: Int { paths.count * 2 }

    func rows(ofPiece piece: Int) -> [StoreMutation] {
        if let early, let rows = early.take(piece) { return rows }
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

/// The rows of an admin action's writes, made from the tree before it and the written nodes alone, before the new
/// tree exists: on another core, from the moment the writes are known, while the compute thread makes the new
/// tree and the loop commits it. `PublishRows` takes them from here. Thread-safe.
///
/// For most writes the rows need nothing of the new tree: the paths are disjoint, so the new node at a path is the
/// written node, and `Namespace.mutations` compares it with the old one there. The new tree matters only where the
/// region of a write moves up from its path (see `Namespace.mutations`), and the piece holding such a write is
/// left to `PublishRows`, which has the new tree (`isMadeEarly` false):
/// - a `.priority` write, which rewrites its parent;
/// - an ancestor that was a leaf (it becomes an object holding every write below it);
/// - a delete with an ancestor that has a priority (if the ancestor becomes empty, its priority row goes too; with
///   no priority, an ancestor emptied by deletes holds no row but those the deletes remove).
final class EarlyPublishRows: Sendable {
    private enum Piece {
        case unclaimed
        case making
        case made([StoreMutation])
        /// Taken, or left to `PublishRows` (not made early).
        case gone
    }

    /// The tree the rows are made against: they hold only for a commit on this very tree.
    let before: Node
    // Two arrays, not the writes' tuples, which Swift cannot see are Sendable.
    /// The writes' paths, in order. Made off the loop, they are also the paths the loop commits (`Namespace.commit`).
    let paths: [Path]
    private let nodes: [Node]
    private let pieces: Mutex<[Piece]>
    /// One per piece, entered while the piece is being made: what a taker waits on.
    private let making: [DispatchGroup]

    /// Starts making the rows of `writes` against `before` on a thread of their own, niced as the compute pool is:
    /// at nice 0 it took a core from the loop, which then committed the publish up to 8 ms late.
    static func start(writes: [(path: Path, node: Node)], before: Node) -> EarlyPublishRows {
        let early = EarlyPublishRows(writes: writes, before: before)
        StorePool.runDetached(name: "canopy.rows", niceness: NamespaceRegistry.computeNiceness) { early.makeAll() }
        return early
    }

    /// Makes nothing by itself; call `makeAll` (or `start`) for that.
    init(writes: [(path: Path, node: Node)], before: Node) {
        self.before = before
        paths = writes.map(\.path)
        nodes = writes.map(\.node)
        let count = (writes.count + PublishRows.pathsPerPiece - 1) / PublishRows.pathsPerPiece
        pieces = Mutex(Array(repeating: .unclaimed, count: count))
        making = (0..<count).map { _ in DispatchGroup() }
    }

    /// Makes the unclaimed pieces in order until none is left (or `stop` was called).
    func makeAll() {
        while let piece = claim() { finish(piece, make(piece)) }
    }

    /// Makes no more pieces: the action is not committed on `before` after all.
    func stop() {
        pieces.withLock { pieces in
            for index in pieces.indices { if case .unclaimed = pieces[index] { pieces[index] = .gone } }
        }
    }

    /// Piece `piece`'s rows, handed over (asked again, nil): made here when nobody has started it, waited for when
    /// it is being made. Nil when the piece cannot be made without the new tree.
    func take(_ piece: Int) -> [StoreMutation]? {
        while true {
            enum Next { case rows([StoreMutation]?), make, wait }
            let next: Next = pieces.withLock { pieces in
                guard pieces.indices.contains(piece) else { return .rows(nil) }
                switch pieces[piece] {
                case .made(let rows):
                    pieces[piece] = .gone
                    return .rows(rows)
                case .gone: return .rows(nil)
                case .unclaimed:
                    pieces[piece] = .gone
                    return .make
                case .making: return .wait
                }
            }
            switch next {
            case .rows(let rows): return rows
            case .make: return make(piece)
            case .wait: making[piece].wait()
            }
        }
    }

    /// Whether piece `piece` holds only writes whose rows need nothing of the new tree; for tests.
    func isMadeEarly(_ piece: Int) -> Bool { make(piece) != nil }

    private func claim() -> Int? {
        pieces.withLock { pieces in
            guard let index = pieces.firstIndex(where: { if case .unclaimed = $0 { true } else { false } }) else {
                return nil
            }
            pieces[index] = .making
            making[index].enter()  // before the lock is released: a taker that sees `.making` waits for it
            return index
        }
    }

    private func finish(_ piece: Int, _ rows: [StoreMutation]?) {
        pieces.withLock { $0[piece] = rows.map(Piece.made) ?? .gone }
        making[piece].leave()
    }

    /// The rows of piece `piece`, or nil when one of its writes needs the new tree.
    private func make(_ piece: Int) -> [StoreMutation]? {
        let start = piece * PublishRows.pathsPerPiece
        var out: [StoreMutation] = []
        // The old nodes along the previous path (`chain[d]` at its first d keys): the writes come in key order,
        // so the next path shares a prefix with it (`private/adminable/users`, often the user too), which is not
        // looked up again.
        var chain: [Node] = [before]
        var previous: [String] = []
        for index in start..<min(paths.count, start + PublishRows.pathsPerPiece) {
            let segments = paths[index].segments
            let node = nodes[index]
            guard segments.last != ".priority" else { return nil }
            var shared = 0
            while shared < previous.count, shared < segments.count, sameKey(previous[shared], segments[shared]) {
                shared += 1
            }
            chain.removeSubrange((shared + 1)...)
            for key in segments[shared...] { chain.append(chain[chain.count - 1].child(key)) }
            previous = segments
            for ancestor in chain.dropLast() {
                if ancestor.isEmpty { break }
                if ancestor.isLeaf || (node.isEmpty && ancestor.priority != nil) { return nil }
            }
            // `node` is the new tree's node at the path, and no region moves up: the rows of `Namespace.mutations`.
            out += Namespace.mutations(at: paths[index], old: chain[segments.count], new: node)
        }
        return out
    }
}
