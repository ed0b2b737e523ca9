// LongPollScriptTests -- the JavaScript bodies of long-poll answers.

import CanopyCore
import Testing

@testable import CanopyServer

@Suite struct LongPollScriptTests {
    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func startThenHandshakeCallTheNumberedCallbacks() throws {
        let data = LongPollScript.data(callbackID: "12", number: 0, messages: [#"{"t":"c"}"#])
        let body = text(LongPollScript.start(callbackID: "12", id: "abc", password: "XYZ", data: data))
        let calls = LongPollTestClient.calls(in: body)
        #expect(calls.map(\.name) == ["pLPCommand12", "pRTLPCB12"])
        #expect(calls[0].arguments == ["start", "abc", "XYZ"])
        #expect(calls[1].arguments == [0, [["t": "c"]]])
        #expect(body.contains("parent"))
    }

    @Test func dataKeepsMessageOrderAndEscapesLineSeparators() throws {
        let body = text(
            LongPollScript.data(
                callbackID: nil, number: 7, messages: [#"{"a":"x\#u{2028}y\#u{2029}"}"#, "{}"]))
        #expect(!body.unicodeScalars.contains("\u{2028}"))
        #expect(!body.unicodeScalars.contains("\u{2029}"))
        #expect(body.contains(#"x\u2028y\u2029"#))
        let calls = LongPollTestClient.calls(in: body)
        #expect(calls.first?.name == "pRTLPCB")
        #expect(calls.first?.arguments == [7, [["a": "x\u{2028}y\u{2029}"], [:]]])
    }

    @Test func closeNamesTheLastResponse() {
        #expect(
            LongPollTestClient.calls(in: text(LongPollScript.close(callbackID: "1", lastNumber: 4)))[0]
                .arguments == ["close", 4])
        #expect(
            LongPollTestClient.calls(in: text(LongPollScript.close(callbackID: "1", lastNumber: nil)))[0]
                .arguments == ["close"])
    }

    @Test func disconnectFrameReportsLeavingToTheSession() {
        let page = text(LongPollScript.disconnectFrame(id: "abc", password: "XYZ", namespace: "app"))
        #expect(page.contains("/.lp?disconn=t&id=abc&pw=XYZ&ns=app"))
        #expect(page.contains("pagehide"))
    }
}
