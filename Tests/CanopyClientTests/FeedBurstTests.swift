// FeedBurstTests -- the feed's barrier state machine: one barrier per burst, more while events keep coming.

import Testing

@testable import CanopyClient

@Suite struct FeedBurstTests {
    @Test func aLoneEventEndsItsBurstWhenTheBarrierReturns() {
        var burst = FeedBurst()
        #expect(burst.event() == .queueBarrier)
        #expect(burst.barrier() == .endBurst)
        #expect(burst.event() == .queueBarrier)  // the next burst
    }

    @Test func eventsBehindTheBarrierQueueAnother() {
        var burst = FeedBurst()
        #expect(burst.event() == .queueBarrier)
        #expect(burst.barrier() == .endBurst)
        #expect(burst.event() == .queueBarrier)
        #expect(burst.event() == .none)
        #expect(burst.barrier() == .queueBarrier)  // an event arrived while the barrier travelled
        #expect(burst.barrier() == .endBurst)
    }

    @Test func aContinuousStreamStillEndsAfterMaxRounds() {
        var burst = FeedBurst()
        #expect(burst.event() == .queueBarrier)
        var actions: [FeedBurst.Action] = []
        for _ in 0..<FeedBurst.maxRounds {
            #expect(burst.event() == .none)
            actions.append(burst.barrier())
        }
        #expect(actions == Array(repeating: .queueBarrier, count: FeedBurst.maxRounds - 1) + [.endBurst])
    }
}
