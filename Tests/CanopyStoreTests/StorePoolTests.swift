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
}
