// NamespaceStore+Load -- streaming every stored row back at start-up.
import CanopyCore
import Foundation

extension NamespaceStore {
    /// Reads every stored row, in key order, from one consistent snapshot.
    ///
    /// Uses its own read-only connection, so it may run while writes are being committed (it sees the state
    /// as of its start). Key order is UTF-8 byte order of the joined path, which is not depth-first order
    /// ("a b" sorts between "a" and "a/b"): insert entries by path.
    /// - Parameter body: called once per row; throwing stops the scan and rethrows.
    /// - Throws: `StoreError` (`.sqlite`, `.corrupt`) or whatever `body` throws.
    public func loadAll(_ body: (StoredEntry) throws -> Void) throws {
        let connection = try openReadTransaction()
        let select: Statement
        do {
            select = try connection.prepare(StoreSchema.SQL.selectAll)
        } catch {
            try? connection.execute(StoreSchema.SQL.commit)
            throw StoreError(error, location: path)
        }
        defer {
            select.reset()
            try? connection.execute(StoreSchema.SQL.commit)
        }
        while true {
            let hasRow: Bool
            do { hasRow = try select.step() } catch { throw StoreError(error, location: path) }
            guard hasRow else { break }
            try body(Self.entry(from: select))
        }
    }

    /// Reads every stored row as `loadAll(_:)` does, but on a thread of its own (`readingAhead`), a chunk of rows
    /// ahead of `body`: SQLite's steps and the rows' decoding (about a third of a load) overlap the caller's work.
    /// At most `chunksAhead` chunks of `rowsPerChunk` rows wait. When `body` throws, the reader stops at its next
    /// chunk and is waited for before this rethrows, so its read transaction never outlives the call.
    public func loadAll(readingAhead: Bool, _ body: (StoredEntry) throws -> Void) throws {
        guard readingAhead else { return try loadAll(body) }
        let channel = RowChannel(chunksAhead: 4)
        let reader = Thread { [self] in
            // SCHED_IDLE: reading ahead takes a core only when no other thread wants it (the event loop preempts it
            // at once). Other namespaces' reads still slow during a large load (Architecture.md#Loading-a-namespace).
            var parameters = sched_param()
            _ = sched_setscheduler(0, Self.idleScheduling, &parameters)
            var chunk: [StoredEntry] = []
            chunk.reserveCapacity(Self.rowsPerChunk)
            do {
                try loadAll { entry in
                    chunk.append(entry)
                    guard chunk.count == Self.rowsPerChunk else { return }
                    guard channel.put(chunk) else { throw CancellationError() }
                    chunk.removeAll(keepingCapacity: true)
                }
                if !chunk.isEmpty { _ = channel.put(chunk) }
                channel.finish(nil)
            } catch {
                // The rows read before a damaged one still go to `body` first, as without reading ahead.
                if !(error is CancellationError), !chunk.isEmpty { _ = channel.put(chunk) }
                channel.finish(error)
            }
        }
        reader.name = "canopy-load-reader"
        reader.start()
        defer { channel.cancelAndWait() }
        while let chunk = try channel.take() {
            for entry in chunk { try body(entry) }
        }
    }

    static let rowsPerChunk = 4096
    /// Linux's `SCHED_IDLE` policy (not exported to Swift by Glibc's headers).
    private static let idleScheduling: Int32 = 5

    /// The bytes of the file and its WAL on disk (0 for a missing one).
    public var fileBytes: Int {
        func size(_ file: String) -> Int {
            var info = stat()
            return stat(file, &info) == 0 ? Int(info.st_size) : 0
        }
        return size(path) + size(path + "-wal")
    }

    /// A new read-only connection to the file, in a read transaction (one consistent snapshot); commit it when done.
    func openReadTransaction() throws(StoreError) -> SQLiteConnection {
        do {
            let connection = try SQLiteConnection(path: path, mode: .readOnly)
            try connection.execute(StoreSchema.SQL.beginRead)
            return connection
        } catch {
            throw StoreError(error, location: path)
        }
    }

    /// Decodes the current row of `SQL.selectAll`.
    static func entry(from row: Statement) throws(StoreError) -> StoredEntry {
        let key = row.text(at: 0) ?? ""
        let path = StoreSchema.path(for: key)
        let priority = try row.text(at: 3).map { (text) throws(StoreError) in try LeafCodec.decode(text, key: key) }
        switch StoredEntry.Kind(rawValue: row.int64(at: 1)) {
        case .leaf:
            guard let text = row.text(at: 2) else {
                throw StoreError(.corrupt, "a leaf row has no value", location: "/" + key)
            }
            return StoredEntry(path: path, kind: .leaf, value: try LeafCodec.decode(text, key: key), priority: priority)
        case .priority:
            guard priority != nil else {
                throw StoreError(.corrupt, "a priority row has no priority", location: "/" + key)
            }
            return StoredEntry(path: path, kind: .priority, value: .null, priority: priority)
        case nil:
            throw StoreError(.corrupt, "unknown row kind", location: "/" + key)
        }
    }
}

/// Chunks of rows from a reader thread to the loading one, in order; at most `chunksAhead` wait.
private final class RowChannel: @unchecked Sendable {  // safe: every field is guarded by `condition`
    private let condition = NSCondition()
    private var chunks: [[StoredEntry]] = []
    private let chunksAhead: Int
    /// Set once the reader is done: nil inside for the end of the rows, or the error that stopped it.
    private var ended: (any Error)??
    private var cancelled = false

    init(chunksAhead: Int) { self.chunksAhead = chunksAhead }

    /// Queues `chunk`, waiting while `chunksAhead` wait; false once the loading side stopped taking.
    func put(_ chunk: [StoredEntry]) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while chunks.count >= chunksAhead && !cancelled { condition.wait() }
        guard !cancelled else { return false }
        chunks.append(chunk)
        condition.broadcast()
        return true
    }

    /// The reader ended, with `error` or at the end of the rows.
    func finish(_ error: (any Error)?) {
        condition.lock()
        ended = .some(error)
        condition.broadcast()
        condition.unlock()
    }

    /// The next chunk; nil after the last; throws the reader's error once the chunks before it are taken.
    func take() throws -> [StoredEntry]? {
        condition.lock()
        defer { condition.unlock() }
        while chunks.isEmpty && ended == nil { condition.wait() }
        if !chunks.isEmpty {
            condition.broadcast()
            return chunks.removeFirst()  // at most `chunksAhead` wait
        }
        if case .some(.some(let error)) = ended { throw error }
        return nil
    }

    /// Stops the reader (its next `put` fails) and waits until it ended.
    func cancelAndWait() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        while ended == nil { condition.wait() }
        condition.unlock()
    }
}
