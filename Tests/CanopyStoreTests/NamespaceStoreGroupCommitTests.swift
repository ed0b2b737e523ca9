// NamespaceStoreGroupCommitTests -- submissions queued during a commit share the next transaction.
import CanopyCore
import Foundation
import Synchronization
import Testing

@testable import CanopyStore

@Suite struct NamespaceStoreGroupCommitTests {
    let directory = TemporaryDirectory()

    /// A store whose first COMMIT waits until `release` is signalled.
    private func storeWithHeldFirstCommit(
        _ entered: DispatchSemaphore, _ release: DispatchSemaphore, options base: StoreOptions = StoreOptions()
    ) throws -> NamespaceStore {
        var options = base
        let isFirst = Atomic<Bool>(true)
        options.beforeCommit = {
            if isFirst.exchange(false, ordering: .relaxed) {
                entered.signal()
                release.wait()
            }
        }
        return try NamespaceStore(path: directory.file(), options: options)
    }

    @Test func submissionsQueuedDuringACommitShareOneTransaction() throws {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let store = try storeWithHeldFirstCommit(entered, release)
        let order = Mutex<[(thread: Int, index: Int, revision: UInt64)]>([])
        let done = DispatchSemaphore(value: 0)

        store.submit([leaf("first", .int(0))]) { _ in done.signal() }
        entered.wait()  // the writer is now inside the first transaction

        let threads = 4
        let perThread = 50
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                store.submit([leaf("t\(thread)/\(index)", .int(Int64(index)))]) { result in
                    let revision = (try? result.get()) ?? 0
                    order.withLock { $0.append((thread, index, revision)) }
                    done.signal()
                }
            }
        }
        release.signal()
        for _ in 0...(threads * perThread) { done.wait() }

        #expect(store.transactionCount == 2)
        let completions = order.withLock { $0 }
        #expect(completions.count == threads * perThread)
        // Completions run in submission order: revisions strictly increase, 2 ... 201, and each thread's own
        // submissions complete in the order it made them.
        #expect(completions.map(\.revision) == Array(2...UInt64(threads * perThread + 1)))
        for thread in 0..<threads {
            #expect(completions.filter { $0.thread == thread }.map(\.index) == Array(0..<perThread))
        }
        #expect(store.revision == UInt64(threads * perThread + 1))
        #expect(try rows(of: store).count == threads * perThread + 1)
    }

    @Test func aRefusedSubmissionDoesNotSpoilItsGroup() throws {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let store = try storeWithHeldFirstCommit(entered, release)
        let results = Mutex<[Result<UInt64, StoreError>]>([])
        let done = DispatchSemaphore(value: 0)
        let record: @Sendable (Result<UInt64, StoreError>) -> Void = { result in
            results.withLock { $0.append(result) }
            done.signal()
        }
        store.submit([leaf("first", .int(0))]) { _ in done.signal() }
        entered.wait()
        store.submit([leaf("a", .int(1))], completion: record)
        store.submit([leaf("b", .int(2)), leaf("bad", .null)], completion: record)
        store.submit([leaf("c", .int(3))], completion: record)
        release.signal()
        for _ in 0..<4 { done.wait() }

        let outcome = results.withLock { $0 }
        #expect(store.transactionCount == 2)
        #expect(try outcome[0].get() == 2)
        #expect(throws: StoreError.self) { try outcome[1].get() }
        #expect(try outcome[2].get() == 3)
        #expect(try rows(of: store) == ["/a=1", "/c=3", "/first=0"])
    }

    @Test func aLargeBacklogIsSplitAtTheMutationLimit() throws {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        var options = StoreOptions()
        options.maximumMutationsPerTransaction = 10
        let store = try storeWithHeldFirstCommit(entered, release, options: options)
        let done = DispatchSemaphore(value: 0)
        store.submit([leaf("first", .int(0))]) { _ in done.signal() }
        entered.wait()
        for index in 0..<10 {
            store.submit([leaf("a/\(index)", .int(1)), leaf("b/\(index)", .int(2)), leaf("c/\(index)", .int(3))]) { _ in
                done.signal()
            }
        }
        release.signal()
        for _ in 0...10 { done.wait() }
        // 1 held transaction, then 30 mutations in groups of at most 3 submissions (9 mutations): 4 more.
        #expect(store.transactionCount == 5)
        #expect(try rows(of: store).count == 31)
    }

    @Test func aFullDatabaseInsideAGroupLeavesExactlyTheAcknowledgedWrites() throws {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        var options = StoreOptions()
        options.maximumPageCount = 8
        let store = try storeWithHeldFirstCommit(entered, release, options: options)
        let results = Mutex<[String: Result<UInt64, StoreError>]>([:])
        let done = DispatchSemaphore(value: 0)
        store.submit([leaf("first", .int(0))]) { _ in done.signal() }
        entered.wait()
        let big = String(repeating: "b", count: 200_000)
        for (key, value) in [("a", "1"), ("big", big), ("c", "3")] {
            store.submit([leaf(key, .string(value))]) { result in
                results.withLock { $0[key] = result }
                done.signal()
            }
        }
        release.signal()
        for _ in 0..<4 { done.wait() }

        let outcome = results.withLock { $0 }
        #expect(throws: StoreError.self) { try outcome["big"]?.get() }
        let stored = try rows(of: store)
        for key in ["a", "c"] {
            let acknowledged = (try? outcome[key]?.get()) != nil
            #expect(acknowledged == stored.contains { $0.hasPrefix("/\(key)=") }, "\(key): \(stored)")
        }
        #expect(!stored.contains { $0.hasPrefix("/big=") })
        let acknowledgedCount = outcome.values.filter { (try? $0.get()) != nil }.count
        #expect(store.revision == 1 + UInt64(acknowledgedCount))
    }
}
