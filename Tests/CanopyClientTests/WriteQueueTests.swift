// WriteQueueTests -- write ids, outcomes kept for late callers, waiters woken by the answer.

import CanopyCore
import Testing

@testable import CanopyClient

@Suite struct WriteQueueTests {
    func write(_ id: Int64) throws -> UserWrite {
        UserWrite(id: id, path: Path(segments: ["a"]), change: .set(try Node.from(json: .int(id))), wire: .int(id))
    }

    @Test func idsFollowRestoredAndSkippedRows() throws {
        var queue = WriteQueue()
        queue.restore(try write(4))
        queue.skip(9)
        #expect(queue.makeID() == 10 as Int64)
        #expect(queue.userWriteCount == 1)
    }

    @Test func anAnswerIsKeptForALateCallerAndWakesTheWaiting() async throws {
        var queue = WriteQueue()
        let id = queue.makeID()
        queue.append(try write(id))
        #expect(queue.status(of: id) == .pending)
        _ = queue.remove(id)
        queue.finish(id, .rejected("no"), error: .permissionDenied(path: "/a"))
        #expect(queue.status(of: id) == .rejected("no"))
        await #expect(throws: ClientError.permissionDenied(path: "/a")) {
            try await withCheckedThrowingContinuation { queue.wait(for: id, $0) }
        }
    }

    @Test func onlyTheLatestOutcomesAreKept() {
        var queue = WriteQueue()
        for _ in 0...WriteQueue.finishedLimit {
            queue.finish(queue.makeID(), .rejected("x"), error: nil)
        }
        #expect(queue.status(of: 1) == .synced)  // forgotten: reported as done
        #expect(queue.status(of: Int64(WriteQueue.finishedLimit)) == .rejected("x"))
    }
}
