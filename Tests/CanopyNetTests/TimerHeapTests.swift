// TimerHeapTests -- ordering and cancellation of the event loop's timers.
import Foundation
import Testing

@testable import CanopyNet

@Suite struct TimerHeapTests {
    @Test func timersFireInDeadlineOrderAndCancelledOnesNever() throws {
        let loop = try EventLoop()
        var fired: [Int] = []
        loop.schedule(afterMilliseconds: 30) { fired.append(3) }
        let cancelled = loop.schedule(afterMilliseconds: 10) { fired.append(99) }
        loop.schedule(afterMilliseconds: 0) { fired.append(1) }
        loop.schedule(afterMilliseconds: 20) { fired.append(2) }
        loop.schedule(afterMilliseconds: 40) { loop.stop() }
        cancelled.cancel()
        #expect(!cancelled.isActive)
        loop.run()
        #expect(fired == [1, 2, 3])
    }

    /// A delay too long for the loop's nanosecond clock (a token's `exp` 600 years or more away, or `Int64.max`)
    /// is a deadline never reached, not an overflow trap; a negative delay runs on the next pass like a zero one.
    @Test func extremeDelaysSaturate() throws {
        let loop = try EventLoop()
        var fired: [Int] = []
        let far = [Int64.max, Int64.max / 1000 + 1, 600 * 31_556_952_000, 18_446_744_073_710].map { delay in
            loop.schedule(afterMilliseconds: delay) { fired.append(99) }
        }
        loop.schedule(afterMilliseconds: .min) { fired.append(1) }
        loop.schedule(afterMilliseconds: -1) { fired.append(2) }
        loop.schedule(afterMilliseconds: 20) { loop.stop() }
        loop.run()
        #expect(fired == [1, 2])
        #expect(far.filter(\.isActive).count == far.count)
        #expect(far[0].deadline == .max)
        for timer in far { timer.cancel() }
        #expect(far.filter(\.isActive).isEmpty)
    }

    /// With only a never-reached timer left, the loop sleeps (its wait is capped, not overflowed) and still wakes
    /// for work from another thread.
    @Test(.timeLimit(.minutes(1))) func loopWithOnlyAFarTimerSleepsAndWakes() throws {
        let runner = try LoopThread { loop in
            loop.schedule(afterMilliseconds: .max) { Issue.record("a far timer fired") }
        }
        Thread.sleep(forTimeInterval: 0.05)  // the loop is asleep in epoll_wait with the capped timeout
        let woke = DispatchSemaphore(value: 0)
        runner.loop.execute { woke.signal() }
        #expect(woke.wait(timeout: .now() + 10) == .success)
        runner.stopAndWait()
    }

    @Test func heapPopsInOrderAfterArbitraryRemovals() throws {
        let loop = try EventLoop()
        var heap = TimerHeap()
        var handles: [TimerHandle] = []
        // Deterministic pseudo-random deadlines.
        var seed: UInt64 = 12345
        for sequence in 0..<200 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let handle = TimerHandle(deadline: seed >> 40, sequence: UInt64(sequence), work: {}, loop: loop)
            heap.insert(handle)
            handles.append(handle)
        }
        for index in stride(from: 0, to: 200, by: 3) { heap.remove(handles[index]) }
        var previous: (UInt64, UInt64) = (0, 0)
        var popped = 0
        while let next = heap.popFirst() {
            #expect((next.deadline, next.sequence) >= previous)
            previous = (next.deadline, next.sequence)
            popped += 1
        }
        #expect(popped == 200 - 67)
    }
}
