// CommitSequenceTests -- a WAL lost or damaged after a crash is noticed on open, not served as if nothing happened.
import CanopyCore
import CanopyTestSupport
import Foundation
import Testing

@testable import CanopyStore

@Suite struct CommitSequenceTests {
    let directory = TemporaryDirectory()

    /// Commits 200 submissions, one leaf each, and copies the files as `kill -9` would leave them (no checkpoint
    /// since the WAL last restarted, no close) into a fresh directory; returns the copy's database path.
    private func crashedCopy(options: StoreOptions = StoreOptions()) throws -> String {
        let path = directory.file()
        let store = try NamespaceStore(path: path, options: options)
        for index in 0..<200 { try commit(store, [leaf("k/\(index)", .int(Int64(index)))]) }
        let crashed = directory.file("crashed-\(UUID().uuidString).sqlite")
        for suffix in ["", "-wal", "-shm", "-seq"] {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: crashed + suffix)
        }
        store.flushAndClose()
        return crashed
    }

    @Test(arguments: WALDamage.allCases) func aDamagedWALIsRefused(damage: WALDamage) throws {
        let crashed = try crashedCopy()
        try damage.apply(to: crashed)
        let error = try #require(throws: StoreError.self) { try NamespaceStore(path: crashed) }
        #expect(error.kind == .dataLoss)
        let missing = try #require(error.missing)
        #expect(missing.expected == 200)
        #expect(missing.found < 200)
        #expect(error.userMessage.contains("revision 200 was committed"))
        // Refusing leaves the files for whoever investigates: the WAL is neither checkpointed nor reset.
        if damage != .delete { #expect(FileManager.default.fileExists(atPath: crashed + "-wal")) }
        #expect(throws: StoreError.self) { try NamespaceStore(path: crashed) }
    }

    @Test(arguments: [StoreOptions.Synchronous.full, .normal]) func anIntactCrashedStoreOpens(
        synchronous: StoreOptions.Synchronous
    ) throws {
        let crashed = try crashedCopy(options: StoreOptions(synchronous: synchronous))
        let store = try NamespaceStore(path: crashed)
        #expect(store.revision == 200)
        #expect(try rows(of: store).count == 200)
    }

    @Test func aWALLostAfterACheckpointLosesNothingAndOpens() throws {
        let path = directory.file()
        do {
            let store = try NamespaceStore(path: path)
            for index in 0..<50 { try commit(store, [leaf("k/\(index)", .int(Int64(index)))]) }
            store.flushAndClose()  // checkpoints (TRUNCATE)
        }
        try? FileManager.default.removeItem(atPath: path + "-wal")
        let store = try NamespaceStore(path: path)
        #expect(store.revision == 50)
        #expect(try rows(of: store).count == 50)
    }

    @Test func acceptingTheLossServesWhatWasRecoveredAndRebaselines() throws {
        let crashed = try crashedCopy()
        try WALDamage.delete.apply(to: crashed)
        var options = StoreOptions()
        options.acceptsDataLoss = true
        let found: UInt64
        do {
            let store = try NamespaceStore(path: crashed, options: options)
            found = store.revision
            #expect(found < 200)
            try commit(store, [leaf("after", .int(1))])
            store.flushAndClose()
        }
        // The next open, without the flag, starts from the accepted baseline.
        let store = try NamespaceStore(path: crashed)
        #expect(store.revision == found + 1)
    }

    @Test func aStoreWithoutARecordOpensAndGetsOne() throws {
        let crashed = try crashedCopy()
        try FileManager.default.removeItem(atPath: crashed + "-seq")
        let store = try NamespaceStore(path: crashed)
        #expect(store.revision == 200)
        #expect(CommitSequenceFile.read(at: crashed + "-seq") == .revision(200))
    }

    @Test func aDamagedRecordIsRefused() throws {
        let crashed = try crashedCopy()
        try Data("not a record at all, 24+".utf8).write(to: URL(fileURLWithPath: crashed + "-seq"))
        let error = try #require(throws: StoreError.self) { try NamespaceStore(path: crashed) }
        #expect(error.kind == .dataLoss)
        #expect(error.missing == nil)
    }

    @Test func theRecordFollowsEveryAcknowledgedCommit() throws {
        let path = directory.file()
        let store = try NamespaceStore(path: path)
        for index in 1...5 {
            try commit(store, [leaf("k", .int(Int64(index)))])
            // Written before the acknowledgement.
            #expect(CommitSequenceFile.read(at: path + "-seq") == .revision(UInt64(index)))
        }
    }
}
