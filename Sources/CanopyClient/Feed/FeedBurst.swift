// FeedBurst -- when the attendee feed has seen a whole burst of events: a barrier state machine.
//
// The feed's events come off the client's serial sync queue. After the first event of a burst the feed queues a
// barrier on that queue; every server push queued before it is delivered first. The server writes one commit's
// frames in one loop pass, and the transport hands the frames of one socket read to the queue as one job
// (`TransportEvent.texts`), so a commit read at once can never have the barrier in its middle. If events arrived while the barrier was travelling, the network thread may still be handing
// over the rest of the burst (a commit split across reads), so one more barrier is queued, up to `maxRounds`.
// A barrier that comes back with no new event behind it ends the burst: the feed is merged and yielded once.
// Each round is one queue hop (microseconds), not a timer, so the update shows without visible delay.

/// The barrier state of the feed's event stream.
struct FeedBurst: Sendable {
    /// The most barriers one burst waits for (bounds the delay under a continuous stream of events).
    static let maxRounds = 4

    /// What the feed does next.
    enum Action: Equatable, Sendable {
        /// Nothing (a barrier is already on its way).
        case none
        /// Queue a barrier behind everything on the sync queue.
        case queueBarrier
        /// The burst is over: merge and yield.
        case endBurst
    }

    private var barrierQueued = false
    private var eventsSinceBarrier = 0
    private var rounds = 0

    /// A location's value arrived.
    mutating func event() -> Action {
        eventsSinceBarrier += 1
        guard !barrierQueued else { return .none }
        barrierQueued = true
        eventsSinceBarrier = 0
        rounds = 1
        return .queueBarrier
    }

    /// The barrier came back through the stream.
    mutating func barrier() -> Action {
        precondition(barrierQueued, "a barrier came back that was never queued")
        if eventsSinceBarrier > 0 && rounds < Self.maxRounds {
            eventsSinceBarrier = 0
            rounds += 1
            return .queueBarrier
        }
        barrierQueued = false
        return .endBurst
    }
}
