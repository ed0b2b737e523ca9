// WALDamage -- the four ways a WAL is damaged after a crash, applied to a store's files as a test would find them.
//
// Reads SQLite's wal-index (`-shm`) for how many frames the WAL holds (mxFrame) and how many are already copied
// into the database (nBackfill), so each damage hits frames that are not in the database file yet: a damage past
// them would lose nothing. Layouts from sqlite.org/walformat.html (the wal-index header is native-endian; the WAL
// header and frame headers are big-endian).

import Foundation

/// A damage done to the WAL of a store file while no process has it open.
public enum WALDamage: String, CaseIterable, Sendable, CustomStringConvertible {
    /// The WAL file is removed.
    case delete
    /// The WAL is cut before its last frame.
    case truncate
    /// Frames in the middle of the ones not yet checkpointed are overwritten with other bytes.
    case overwrite
    /// The WAL header's checksum no longer matches (SQLite then ignores the whole WAL).
    case corruptHeader

    public var description: String { rawValue }

    /// The frames of `databasePath`'s WAL per its wal-index: (frames in the WAL, frames already checkpointed).
    public static func frames(of databasePath: String) -> (mxFrame: Int, nBackfill: Int)? {
        guard let shm = FileManager.default.contents(atPath: databasePath + "-shm"), shm.count >= 136 else { return nil }
        func u32(_ offset: Int) -> Int {
            Int(shm.subdata(in: offset..<(offset + 4)).withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
        }
        return (u32(16), u32(96))
    }

    /// Applies the damage to the WAL of `databasePath`.
    /// - Throws: when the WAL holds no frame that is not checkpointed yet (the damage would lose nothing).
    public func apply(to databasePath: String) throws {
        let wal = databasePath + "-wal"
        guard let (mxFrame, nBackfill) = Self.frames(of: databasePath), mxFrame > nBackfill,
            let header = FileManager.default.contents(atPath: wal), header.count >= 32
        else { throw DamageError("the WAL of \(databasePath) holds no frame that is not checkpointed") }
        let pageSize = header[8..<12].reduce(0) { ($0 << 8) | Int($1) }
        let frameSize = 24 + pageSize
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: wal))
        defer { try? handle.close() }
        switch self {
        case .delete:
            try handle.close()
            try FileManager.default.removeItem(atPath: wal)
        case .truncate:
            try handle.truncate(atOffset: UInt64(32 + (mxFrame - 1) * frameSize))
        case .overwrite:
            let middle = nBackfill + (mxFrame - nBackfill) / 2
            try handle.seek(toOffset: UInt64(32 + middle * frameSize))
            try handle.write(contentsOf: Data(repeating: 0xA5, count: frameSize * max(1, (mxFrame - middle) / 2)))
        case .corruptHeader:
            try handle.seek(toOffset: 24)  // the first checksum word
            let current = header[24]
            try handle.write(contentsOf: Data([current ^ 0xFF]))
        }
    }

    struct DamageError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
