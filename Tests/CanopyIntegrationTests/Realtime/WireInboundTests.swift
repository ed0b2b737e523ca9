// WireInboundTests -- decoding a reassembled client message into what a wire session acts on (no loop, no sockets).

import CanopyCore
import Testing

@testable import CanopyServer

@Suite struct WireInboundTests {
    @Test func requestsCarryTheirActionNumberAndBody() {
        #expect(
            WireInbound.decode(#"{"t":"d","d":{"r":7,"a":"p","b":{"p":"/a","d":1}}}"#)
                == .request(action: "p", request: 7, body: ["p": "/a", "d": 1]))
        // No `r`: nothing is answered; no `b`: an empty body.
        #expect(WireInbound.decode(#"{"t":"d","d":{"a":"s"}}"#) == .request(action: "s", request: nil, body: [:]))
    }

    @Test func controlMessagesCarryTheirType() {
        #expect(WireInbound.decode(#"{"t":"c","d":{"t":"p","d":{}}}"#) == .control("p"))
        #expect(WireInbound.decode(#"{"t":"c","d":{}}"#) == .control(nil))
    }

    @Test(arguments: [#"{"t":"d","d":{"r":1,"b":{}}}"#, #"{"t":"d","d":{"a":5}}"#, #"{"t":"x","d":{}}"#])
    func messagesWithoutAStringActionAreIgnored(text: String) {
        #expect(WireInbound.decode(text) == .ignored)
    }

    @Test(arguments: ["", "0", "{", #"{"t":"d"}"#, #"{"d":{"a":"p"}}"#, #"{"t":1,"d":{}}"#, #"[{"t":"d","d":{}}]"#])
    func malformedMessagesDecodeToNil(text: String) {
        #expect(WireInbound.decode(text) == nil)
    }
}
