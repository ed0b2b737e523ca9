// FlushOrderTests -- a pass writes answering connections before WebSockets, each group in the order it was marked.
import Testing

@testable import CanopyNet

@Suite struct FlushOrderTests {
    @Test func answersAreWrittenBeforeWebSocketsMarkedEarlier() {
        var order = FlushOrder<String>()
        order.append("ws1", isAnswering: false)
        order.append("rest1", isAnswering: true)
        order.append("ws2", isAnswering: false)
        order.append("sse", isAnswering: true)
        #expect(order.nextBatch() == ["rest1", "sse"])
        // An answer made while the first batch was written (a pipelined request) still goes before the WebSockets.
        order.append("rest2", isAnswering: true)
        #expect(order.nextBatch() == ["rest2"])
        #expect(!order.isEmpty)
        #expect(order.nextBatch() == ["ws1", "ws2"])
        #expect(order.isEmpty)
        #expect(order.nextBatch().isEmpty)
    }

    @Test func answersMadeWhileEventsAreWrittenAreTakenAloneAndTheEventsStay() {
        var order = FlushOrder<String>()
        order.append("ws1", isAnswering: false)
        #expect(!order.hasAnswers)
        order.append("rest1", isAnswering: true)
        #expect(order.hasAnswers)
        #expect(order.takeAnswers() == ["rest1"])
        #expect(!order.hasAnswers && !order.isEmpty)
        #expect(order.takeAnswers().isEmpty)
        #expect(order.nextBatch() == ["ws1"])
        #expect(order.isEmpty)
    }
}
