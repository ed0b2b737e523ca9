// TimerHeapTests -- ordering and cancellation of the event loop's timers.
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
