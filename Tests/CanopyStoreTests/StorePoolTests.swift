// StorePoolTests -- the shared worker threads: a job, and everything it captured, is let go once it has run.
import Foundation
import Synchronization
import Testing

@testable import CanopyStore

@Suite(.timeLimit(.minutes(1))) struct StorePoolTests {
    final class Payload: Sendable {}

    @Test func whatAJobCapturedIsReleasedOnceItHasRun() throws {
        let pool = StorePool(threads: 1, name: "canopy.test")
        defer { pool.shutdown() }
        let done = DispatchSemaphore(value: 0)
        weak var released: Payload?
        do {
            let payload = Payload()
            released = payload
            let job: @Sendable () -> Void = {
                _ = payload
                done.signal()
            }
            pool.run(job)
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        // The job has returned once a second one runs on the single thread.
        let second = DispatchSemaphore(value: 0)
        pool.run { second.signal() }
        #expect(second.wait(timeout: .now() + 10) == .success)
        #expect(released == nil)
    }

    @Test func aJobQueuedAfterEveryThreadLeftStillRuns() throws {
        // A store released after its daemon stopped closes its file on the pool, and its deinit waits for that:
        // with no thread left to run the close, a test process hung at exit.
        let pool = StorePool(threads: 2, name: "canopy.test")
        #expect(stopAndWaitUntilEveryThreadLeft(pool))
        let ran = DispatchSemaphore(value: 0)
        pool.run { ran.signal() }
        #expect(ran.wait(timeout: .now() + 10) == .success)
        let second = DispatchSemaphore(value: 0)
        pool.run { second.signal() }
        #expect(second.wait(timeout: .now() + 10) == .success)
    }

    @Test func aStoreReleasedAfterItsPoolStoppedStillCloses() throws {
        let directory = TemporaryDirectory()
        let pool = StorePool(threads: 1, name: "canopy.test")
        let store = try NamespaceStore(path: directory.file("late.sqlite"), pool: pool)
        try commit(store, [leaf("a", 1)])
        let held = Mutex<NamespaceStore?>(consume store)
        _ = stopAndWaitUntilEveryThreadLeft(pool)
        let released = DispatchSemaphore(value: 0)
        Thread {
            // The last reference goes: deinit closes the file through the pool, and waits for it.
            let store = held.withLock { $0.take() }
            _ = consume store
            released.signal()
        }.start()
        #expect(released.wait(timeout: .now() + 10) == .success)
        withExtendedLifetime(directory) {}
    }

    /// Shuts `pool` down and waits up to 10 s for its threads to leave; whether they all did.
    private func stopAndWaitUntilEveryThreadLeft(_ pool: StorePool) -> Bool {
        pool.shutdown()
        let deadline = Date().addingTimeInterval(10)
        while pool.liveThreadCount > 0 && Date() < deadline { usleep(1_000) }
        return pool.liveThreadCount == 0
    }
}
