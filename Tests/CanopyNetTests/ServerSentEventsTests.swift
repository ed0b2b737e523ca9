// ServerSentEventsTests -- event formatting with LF-only line endings.
import CanopyNet
import Testing

@Suite struct ServerSentEventsTests {
    @Test(arguments: [
        ("put", #"{"path":"/","data":{"a":1}}"#, "event: put\ndata: {\"path\":\"/\",\"data\":{\"a\":1}}\n\n"),
        ("keep-alive", "null", "event: keep-alive\ndata: null\n\n"),
        (
            "auth_revoked", "credential is no longer valid",
            "event: auth_revoked\ndata: credential is no longer valid\n\n"
        ),
        ("x", "a\nb\r\nc\rd", "event: x\ndata: a\ndata: b\ndata: c\ndata: d\n\n"),
        ("x", "", "event: x\ndata: \n\n"),
        ("bad\r\nname", "1", "event: badname\ndata: 1\n\n"),
    ])
    func eventsAreFormattedWithLineFeeds(name: String, data: String, expected: String) {
        #expect(String(decoding: ServerSentEvents.event(name, data: data), as: UTF8.self) == expected)
    }

    @Test func commentsCannotInjectEvents() {
        #expect(String(decoding: ServerSentEvents.comment("hi\nevent: x"), as: UTF8.self) == ":hievent: x\n\n")
    }
}
