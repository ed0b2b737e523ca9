// HTTPConnectionStateMachineTests -- the phases of an HTTP connection, driven by events without sockets.
import Testing

@testable import CanopyNet

@Suite struct HTTPConnectionStateMachineTests {
    typealias Machine = HTTPConnectionStateMachine
    static let ms: UInt64 = 1_000_000

    @Test func aRequestWithoutKeepAliveIsTheLastAndClosesOnceWritten() {
        var machine = Machine(now: 0)
        #expect(machine.bytesReceived() == .parse)
        machine.requestParsed(keepAlive: false)
        #expect(!machine.acceptsRequests)
        #expect(machine.bytesReceived() == .discard)
        #expect(machine.outputWritten() == .none)  // the answer is not queued yet
        machine.lastAnswerQueued()
        #expect(machine.outputWritten() == .close)
    }

    @Test func anErrorAnswerLingersUnlessThePeerAlreadyClosed() {
        var machine = Machine(now: 0)
        machine.requestFailed()
        machine.lastAnswerQueued()
        #expect(machine.outputWritten() == .linger)
        #expect(machine.state == .lingering)
        #expect(machine.wantsToRead(isBackpressured: true, isWebSocketOpen: false, isOverSoftLimit: true))
        #expect(machine.timer(isPipelineEmpty: true, hasPendingOutput: false, parser: .idle) == .linger)
        #expect(machine.timerFired(.linger, now: 0, limits: HTTPServerLimits()) == .close)

        var halfClosed = Machine(now: 0)
        halfClosed.requestParsed(keepAlive: true)
        #expect(halfClosed.endOfInput(hasUnansweredRequests: true) == .finishAnswers)
        halfClosed.requestFailed()
        halfClosed.lastAnswerQueued()
        #expect(halfClosed.outputWritten() == .close)
    }

    @Test func endOfInputClosesAtOnceWithNothingOwedOrASecondTime() {
        var idle = Machine(now: 0)
        #expect(idle.endOfInput(hasUnansweredRequests: false) == .close)
        var busy = Machine(now: 0)
        #expect(busy.endOfInput(hasUnansweredRequests: true) == .finishAnswers)
        #expect(busy.endOfInput(hasUnansweredRequests: true) == .close)
        var streaming = Machine(now: 0)
        streaming.streamStarted()
        #expect(streaming.endOfInput(hasUnansweredRequests: true) == .close)
    }

    @Test func aStreamReadsOnlyToNoticeThePeerAndClosesWhenItEnds() {
        var machine = Machine(now: 0)
        machine.streamStarted()
        #expect(machine.bytesReceived() == .discard)
        #expect(machine.isSubjectToHardLimit)
        #expect(machine.wantsToRead(isBackpressured: true, isWebSocketOpen: false, isOverSoftLimit: true))
        #expect(machine.timer(isPipelineEmpty: false, hasPendingOutput: true, parser: .idle) == .none)
        #expect(machine.outputWritten() == .none)
        machine.lastAnswerQueued()
        #expect(machine.outputWritten() == .close)
    }

    @Test func anUpgradeBuffersInputUntilThe101IsWrittenThenDeliversFrames() {
        var machine = Machine(now: 0)
        machine.requestParsed(keepAlive: true)
        machine.upgradeStarted()
        #expect(machine.bytesReceived() == .bufferForUpgrade)
        #expect(!machine.wantsToRead(isBackpressured: false, isWebSocketOpen: false, isOverSoftLimit: false))
        machine.upgradeCompleted()
        #expect(machine.bytesReceived() == .deliverToWebSocket)
        #expect(machine.isSubjectToHardLimit)
        #expect(machine.wantsToRead(isBackpressured: true, isWebSocketOpen: true, isOverSoftLimit: false))
        #expect(!machine.wantsToRead(isBackpressured: false, isWebSocketOpen: true, isOverSoftLimit: true))
        #expect(!machine.closesWhenPipelineEmpty)
        machine.webSocketClosing()
        #expect(machine.outputWritten() == .linger)
    }

    @Test func aCloseFrameQueuedBeforeThe101IsKeptForTheSwitch() {
        var machine = Machine(now: 0)
        machine.upgradeStarted()
        machine.webSocketClosing()
        machine.upgradeCompleted()
        #expect(machine.state == .webSocket(closing: true))
        #expect(machine.outputWritten() == .linger)
    }

    @Test func shutdownStopsRequestsButLeavesAWebSocketToItsCloseFrame() {
        var open = Machine(now: 0)
        open.shutdownBegan()
        #expect(!open.acceptsRequests)
        #expect(open.closesWhenPipelineEmpty)
        var socket = Machine(now: 0)
        socket.upgradeStarted()
        socket.upgradeCompleted()
        socket.shutdownBegan()
        #expect(socket.state == .webSocket(closing: false))
    }

    /// A drain that begins while a request is arriving (an upload in flight) reads it to its end and answers it,
    /// as the last one; a connection between requests stops at once.
    @Test func shutdownMidRequestFinishesThatRequestOnly() {
        var machine = Machine(now: 0)
        machine.shutdownBegan(midRequest: true)
        #expect(machine.acceptsRequests)
        #expect(!machine.closesWhenPipelineEmpty)
        #expect(machine.bytesReceived() == .parse)
        machine.requestParsed(keepAlive: true)
        #expect(!machine.acceptsRequests)
        #expect(machine.closesWhenPipelineEmpty)
        machine.lastAnswerQueued()
        #expect(machine.outputWritten() == .close)
    }

    @Test(arguments: [
        (Machine.ParserPhase.idle, Machine.TimerKind.idle), (.head, .head), (.body, .body),
    ])
    func theTimerFollowsTheParser(phase: Machine.ParserPhase, kind: Machine.TimerKind) {
        let machine = Machine(now: 0)
        #expect(machine.timer(isPipelineEmpty: true, hasPendingOutput: false, parser: phase) == kind)
        #expect(machine.timer(isPipelineEmpty: false, hasPendingOutput: false, parser: phase) == .none)
    }

    @Test func aFreshConnectionGetsTheHeadTimeoutToStartThenTheIdleTimeout() {
        var limits = HTTPServerLimits()
        limits.headerTimeoutMs = 10
        limits.idleTimeoutMs = 100
        var machine = Machine(now: 0)
        #expect(machine.timeoutMilliseconds(.idle, limits: limits) == 10)
        machine.requestParsed(keepAlive: true)
        #expect(machine.timeoutMilliseconds(.idle, limits: limits) == 100)
    }

    @Test func aBodyThatProgressedIsGivenTheRemainderOtherwise408() {
        var limits = HTTPServerLimits()
        limits.bodyTimeoutMs = 1_000
        var machine = Machine(now: 0)
        machine.activity(at: 400 * Self.ms)
        #expect(machine.timerFired(.body, now: 1_000 * Self.ms, limits: limits) == .rearm(milliseconds: 400))
        #expect(machine.timerFired(.body, now: 1_400 * Self.ms, limits: limits) == .failRequestTimeout)
        #expect(machine.timerFired(.head, now: 1_400 * Self.ms, limits: limits) == .failRequestTimeout)
    }

    @Test func aSilentWebSocketIsToldToGoAway() {
        var limits = HTTPServerLimits()
        limits.idleTimeoutMs = 1_000
        var machine = Machine(now: 0)
        machine.upgradeStarted()
        machine.upgradeCompleted()
        #expect(machine.timer(isPipelineEmpty: true, hasPendingOutput: false, parser: .idle) == .webSocketIdle)
        #expect(machine.timerFired(.webSocketIdle, now: 1_000 * Self.ms, limits: limits) == .terminateWebSocket)
        machine.closed()
        #expect(machine.timerFired(.webSocketIdle, now: 1_000 * Self.ms, limits: limits) == .none)
    }
}
