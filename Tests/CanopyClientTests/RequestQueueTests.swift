// RequestQueueTests -- request numbers and replies, frames held behind store operations, endings.

import CanopyCore
import Testing

@testable import CanopyClient

@Suite struct RequestQueueTests {
    /// The request number inside a data frame.
    func number(_ frames: [String]) -> Int64? {
        frames.count == 1 ? (try? JSONValue.parse(frames[0]))?["d"]?["r"]?.int64Value : nil
    }

    @Test func requestsAreNumberedAndAnsweredOnce() throws {
        var queue = RequestQueue()
        let first = queue.make("q", ["p": "/a"]) { _ in }
        let second = queue.make("p", ["p": "/a", "d": 1]) { _ in }
        #expect(number(first) == 1 && number(second) == 2)
        #expect(queue.reply(2) != nil)
        #expect(queue.reply(2) == nil)
        #expect(queue.connectionLost().count == 1)  // request 1 was never answered
    }

    @Test func framesWaitForEveryStoreOperationSubmittedBeforeThemInOrder() {
        var queue = RequestQueue()
        let row1 = queue.submitStoreOperation()
        #expect(queue.make("p", ["p": "/a"]) { _ in }.isEmpty)
        let row2 = queue.submitStoreOperation()
        #expect(queue.make("p", ["p": "/b"]) { _ in }.isEmpty)
        #expect(queue.make("q", ["p": "/c"]) { _ in }.isEmpty)  // behind /b, so after it
        #expect(queue.storeCommitted(row1).compactMap { number([$0]) } == [1])
        #expect(queue.isHolding)
        #expect(queue.storeCommitted(row2).compactMap { number([$0]) } == [2, 3])
        #expect(!queue.isHolding)
        #expect(number(queue.make("n", ["p": "/c"]) { _ in }) == 4)  // nothing pending: straight out
    }

    @Test func aDropDiscardsHeldFramesAndKeepsDeferredRequests() {
        var queue = RequestQueue()
        var told: [Int] = []
        _ = queue.submitStoreOperation()
        _ = queue.make("p", ["p": "/a"]) { _ in told.append(1) }
        queue.deferUntilConnected("o", ["p": "/presence"]) { _ in told.append(2) }
        for handler in queue.connectionLost() { handler(.disconnected) }
        #expect(told == [1] && !queue.isHolding)
        #expect(queue.takeDeferred().map(\.action) == ["o"])
        queue.deferUntilConnected("oc", ["p": "/presence"]) { _ in told.append(3) }
        _ = queue.make("q", ["p": "/b"]) { _ in told.append(4) }
        for handler in queue.close() { handler(.disconnected) }
        #expect(told == [1, 4, 3])
    }
}
