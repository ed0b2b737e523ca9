// NamespaceStoreLifecycleTests -- closing from anywhere, closing on release, and files left by a killed process.
import CanopyCore
import Foundation
import Synchronization
import Testing

@testable import CanopyStore

@Suite struct NamespaceStoreLifecycleTests {
    let directory = TemporaryDirectory()

    private func walSize(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? -1
    }

    @Test func releasingTheStoreFlushesAndCheckpoints() throws {
        let path = directory.file()
        do {
            let store = try NamespaceStore(path: path)
            store.submit([leaf("a", .int(1))]) { _ in }
            store.submit([leaf("b", .int(2))]) { _ in }
        }
        // Closed by deinit: both writes committed, WAL checkpointed and truncated.
        #expect(walSize(path) <= 0)
        #expect(try rows(of: try NamespaceStore(path: path)) == ["/a=1", "/b=2"])
    }

    @Test func closingFromACompletionDoesNotDeadlock() throws {
        let store = try NamespaceStore(path: directory.file())
        let done = DispatchSemaphore(value: 0)
        let later = ResultBox()
        store.submit([leaf("a", .int(1))]) { _ in
            store.flushAndClose()  // on a store thread (writer or WAL syncer): must return without waiting for itself
            done.signal()
        }
        done.wait()
        store.submit([leaf("b", .int(2))]) { later.set($0) }
        store.flushAndClose()
        #expect(throws: StoreError.self) { try later.get()?.get() }
        #expect(try rows(of: store) == ["/a=1"])
    }

    @Test func releasingTheLastReferenceInACompletionDoesNotDeadlock() throws {
        let path = directory.file()
        let done = DispatchSemaphore(value: 0)
        do {
            let store = try NamespaceStore(path: path)
            store.submit([leaf("a", .int(1))]) { [store] _ in
                _ = store.revision  // the completion holds the store; it is released on the writer thread
                done.signal()
            }
        }
        done.wait()
        // The writer thread finishes closing on its own; reopening must find the write.
        let reopened = try NamespaceStore(path: path)
        #expect(try rows(of: reopened) == ["/a=1"])
    }

    @Test func filesLeftByAKilledProcessHoldEveryAcknowledgedWrite() throws {
        // kill -9 leaves the database and its WAL as they were after the last acknowledged COMMIT (no
        // checkpoint, no close). Copy them mid-run, as the process would leave them, and open the copy.
        let path = directory.file()
        let store = try NamespaceStore(path: path)
        var acknowledged: [String] = []
        for index in 0..<50 {
            try commit(store, [leaf("k/\(index)", .int(Int64(index)))])
            acknowledged.append("/k/\(index)=\(index)")
        }
        try commit(store, [delete("k/0")])
        acknowledged.removeFirst()

        let crashed = TemporaryDirectory()
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: crashed.file() + suffix)
        }
        #expect(walSize(crashed.file()) > 0)
        let recovered = try NamespaceStore(path: crashed.file())
        #expect(recovered.revision == 51)
        #expect(try Set(rows(of: recovered)) == Set(acknowledged))
        store.flushAndClose()
    }
}
