// ManualClockTests -- timers read the loop's injected clock: they fire when it is advanced, never before.
import Foundation
import Synchronization
import Testing

@testable import CanopyNet

@Suite(.timeLimit(.minutes(1))) struct ManualClockTests {
    @Test func timersFireOnlyWhenTheClockReachesTheirDeadline() throws {
        let clock = ManualClock()
        let loop = try EventLoop(clock: clock)
        var fired: [Int] = []
        loop.schedule(afterMilliseconds: 1_000) { fired.append(1) }
        loop.schedule(afterMilliseconds: 3_000) { fired.append(3) }
        loop.schedule(afterMilliseconds: 2_000) { fired.append(2) }
        loop.runPass()
        #expect(fired.isEmpty)
        clock.advance(byMilliseconds: 999)
        loop.runPass()
        #expect(fired.isEmpty)
        clock.advance(byMilliseconds: 1)
        loop.runPass()
        #expect(fired == [1])
        clock.advance(byMilliseconds: 60_000)
        loop.runPass()
        #expect(fired == [1, 2, 3])
    }

    @Test func aZeroDelayTimerFiresOnTheNextPassWithoutTheClockMoving() throws {
        let loop = try EventLoop(clock: ManualClock())
        var fired = false
        loop.schedule(afterMilliseconds: 0) { fired = true }
        #expect(loop.hasImmediateWork)
        loop.runPass()
        #expect(fired)
        #expect(!loop.hasImmediateWork)
    }

    @Test func advancingWakesALoopBlockedWithAFarTimer() throws {
        let clock = ManualClock()
        let fired = Counter()
        let runner = try LoopThread(clock: clock) { loop in
            loop.schedule(afterMilliseconds: 3_600_000) { fired.increment() }  // an hour: never by itself
        }
        defer { runner.stopAndWait() }
        // A round trip through the loop: it is asleep (in epoll_wait) with the timer pending, not fired.
        let idle = DispatchSemaphore(value: 0)
        runner.loop.execute { idle.signal() }
        idle.wait()
        #expect(fired.value == 0)
        clock.advance(byMilliseconds: 3_600_000)
        #expect(eventually { fired.value == 1 })
    }
}
