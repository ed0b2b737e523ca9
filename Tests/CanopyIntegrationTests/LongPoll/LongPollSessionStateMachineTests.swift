// LongPollSessionStateMachineTests -- a long-poll session's held poll, outbox, retirement and idleness, as events
// and the answers they return (no loop, no sockets).

import Testing

@testable import CanopyServer

@Suite struct LongPollSessionStateMachineTests {
    typealias Machine = LongPollSessionStateMachine
    static let ms: UInt64 = 1_000_000

    func machine(_ configure: (inout LongPollLimits) -> Void = { _ in }) -> Machine {
        var limits = LongPollLimits()
        configure(&limits)
        return Machine(callbackID: "7", limits: limits, now: 0)
    }

    func data(_ number: Int, _ messages: [String]) -> [UInt8] {
        LongPollScript.data(callbackID: "7", number: number, messages: messages)
    }

    @Test func theStartAnswerCarriesTheHandshakeAsResponseZero() {
        var session = machine()
        #expect(session.enqueue("h") == .none)  // no poll is held yet
        let body = session.startResponseBody(id: "i", password: "p")
        #expect(body == LongPollScript.start(callbackID: "7", id: "i", password: "p", data: data(0, ["h"])))
    }

    @Test func aHeldPollIsReleasedByTheNextWithWhatIsQueuedInNumberedAnswers() {
        var session = machine { $0.pollHoldMilliseconds = 20_000 }
        #expect(session.pollArrived(now: 0, heldPollIsGone: false) == .deliver)
        #expect(session.holdArrivingPoll(heldPollIsGone: false) == .hold(releasing: nil, timeoutMilliseconds: 20_000, flush: false))
        #expect(session.enqueue("a") == .scheduleFlush)
        #expect(session.enqueue("b") == .none)  // one flush per pass
        let flushes = session.flushFired()
        #expect(flushes)
        #expect(session.releaseHeldPoll(isGone: false) == data(0, ["a", "b"]))
        let none = session.releaseHeldPoll(isGone: false)
        #expect(none == nil)  // nothing held any more
        _ = session.pollArrived(now: 0, heldPollIsGone: false)
        _ = session.holdArrivingPoll(heldPollIsGone: false)
        #expect(session.enqueue("c") == .scheduleFlush)
        _ = session.pollArrived(now: 0, heldPollIsGone: false)
        #expect(session.holdArrivingPoll(heldPollIsGone: false) == .hold(releasing: data(1, ["c"]), timeoutMilliseconds: 20_000, flush: false))
    }

    @Test func aHeldPollWhoseConnectionIsGoneLeavesTheMessagesForTheNext() {
        var session = machine()
        _ = session.pollArrived(now: 0, heldPollIsGone: false)
        _ = session.holdArrivingPoll(heldPollIsGone: false)
        #expect(session.enqueue("a") == .scheduleFlush)
        let dropped = session.releaseHeldPoll(isGone: true)
        #expect(dropped == [])
        _ = session.pollArrived(now: 0, heldPollIsGone: false)
        // The flush scheduled for the lost poll is still due this pass: it answers the new one.
        guard case .hold(nil, _, false) = session.holdArrivingPoll(heldPollIsGone: false) else {
            Issue.record("the new poll is held")
            return
        }
        let flushes = session.flushFired()
        #expect(flushes)
        #expect(session.releaseHeldPoll(isGone: false) == data(0, ["a"]))
    }

    @Test func retiringWithAHeldPollFinishesAtOnceWithTheCloseCommand() {
        var session = machine()
        _ = session.pollArrived(now: 0, heldPollIsGone: false)
        _ = session.holdArrivingPoll(heldPollIsGone: false)
        _ = session.enqueue("n")
        let close = LongPollScript.close(callbackID: "7", lastNumber: 0)
        #expect(session.retire() == .finished(heldAnswer: data(0, ["n"]) + close))
        #expect(session.isClosed)
        #expect(session.finish() == .alreadyClosed)
    }

    @Test func retiringWithoutAHeldPollAnswersTheNextPollAndFinishes() {
        var session = machine()
        #expect(session.retire() == nil)
        #expect(session.phase == .retiring)
        #expect(session.enqueue("n") == .none)
        let arrival = session.pollArrived(now: 0, heldPollIsGone: false)
        let close = LongPollScript.close(callbackID: "7", lastNumber: 0)
        #expect(arrival == .retire(held: nil, arriving: data(0, ["n"]) + close))
        #expect(session.isClosed)
    }

    @Test func aSessionEndedWhileItsSegmentsWereDeliveredAnswersTheArrivingPollWithClose() {
        var session = machine()
        _ = session.pollArrived(now: 0, heldPollIsGone: false)
        #expect(session.finish() == .finished(heldAnswer: nil))
        #expect(session.holdArrivingPoll(heldPollIsGone: false) == .answerArriving(LongPollScript.close(callbackID: "7", lastNumber: nil)))
        #expect(session.enqueue("late") == .none)
    }

    @Test func anOutboxPastItsLimitOverflows() {
        var session = machine { $0.maxOutboxBytes = 10 }
        #expect(session.enqueue("12345") == .none)
        #expect(session.enqueue("123456") == .overflow)
    }

    @Test func idlenessIsMeasuredFromTheLastRequestOnTheMonotonicClock() {
        var session = machine { $0.idleTimeoutMilliseconds = 60_000 }
        _ = session.pollArrived(now: 0, heldPollIsGone: false)
        #expect(!session.isIdle(now: 59_999 * Self.ms, authenticated: true, holdsLivePoll: false))
        #expect(session.isIdle(now: 60_000 * Self.ms, authenticated: true, holdsLivePoll: false))
        _ = session.pollArrived(now: 50_000 * Self.ms, heldPollIsGone: false)
        #expect(!session.isIdle(now: 109_999 * Self.ms, authenticated: true, holdsLivePoll: false))
        #expect(session.isIdle(now: 110_000 * Self.ms, authenticated: true, holdsLivePoll: false))
    }

    @Test func aSessionThatNeverPollsEndsAfterTheFirstPollTimeout() {
        let session = machine {
            $0.firstPollTimeoutMilliseconds = 15_000
            $0.idleTimeoutMilliseconds = 60_000
        }
        // Authenticated or not: a `start` nobody follows up holds a session for seconds, not a minute.
        for authenticated in [false, true] {
            #expect(!session.isIdle(now: 14_999 * Self.ms, authenticated: authenticated, holdsLivePoll: false))
            #expect(session.isIdle(now: 15_000 * Self.ms, authenticated: authenticated, holdsLivePoll: false))
        }
    }

    @Test func anUnauthenticatedSessionWithoutAHeldPollEndsSooner() {
        var session = machine {
            $0.unauthenticatedIdleTimeoutMilliseconds = 15_000
            $0.idleTimeoutMilliseconds = 60_000
        }
        _ = session.pollArrived(now: 0, heldPollIsGone: false)
        #expect(session.isIdle(now: 15_000 * Self.ms, authenticated: false, holdsLivePoll: false))
        // Holding a poll (the SDK always does, re-polling as soon as one is answered) or being authenticated: the
        // usual timeout.
        #expect(!session.isIdle(now: 59_999 * Self.ms, authenticated: false, holdsLivePoll: true))
        #expect(!session.isIdle(now: 59_999 * Self.ms, authenticated: true, holdsLivePoll: false))
        #expect(session.isIdle(now: 60_000 * Self.ms, authenticated: false, holdsLivePoll: true))
        // Between the answer to a held poll and the SDK's next poll (milliseconds) nothing is held: the quiet time
        // counts from that answer, not from the poll's arrival 20 s before.
        let answeredAt = 20_000 * Self.ms
        let soon = session.isIdle(
            now: 20_001 * Self.ms, authenticated: false, holdsLivePoll: false, lastAnswerAt: answeredAt)
        let later = session.isIdle(
            now: 35_000 * Self.ms, authenticated: false, holdsLivePoll: false, lastAnswerAt: answeredAt)
        #expect(!soon)
        #expect(later)
    }
}
