// HTTPResponseWriterTests -- serialization of responses and stream heads.
import Testing

@testable import CanopyNet

@Suite struct HTTPResponseWriterTests {
    @Test func responseHasStatusLineLengthAndNoFramingFromCaller() {
        let response = HTTPResponse(
            status: 200,
            headers: [("Content-Type", "application/json"), ("content-length", "999"), ("Connection", "x")],
            body: Array("{}".utf8))
        let text = String(decoding: HTTPResponseWriter.bytes(for: response, persistence: .keepAlive), as: UTF8.self)
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
    }

    @Test func closingAndHTTP10KeepAliveSayConnection() {
        let response = HTTPResponse(status: 404)
        let closing = String(decoding: HTTPResponseWriter.bytes(for: response, persistence: .close), as: UTF8.self)
        #expect(closing == "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        let kept = String(
            decoding: HTTPResponseWriter.bytes(for: response, persistence: .keepAliveHTTP10), as: UTF8.self)
        #expect(kept.contains("\r\nConnection: keep-alive\r\n"))
    }

    @Test func noContentHasNoLengthAndNoBody() {
        let text = String(
            decoding: HTTPResponseWriter.bytes(for: HTTPResponse(status: 204, body: [1, 2]), persistence: .keepAlive),
            as: UTF8.self)
        #expect(text == "HTTP/1.1 204 No Content\r\n\r\n")
    }

    @Test func headerValuesCannotSplitTheResponse() {
        let response = HTTPResponse(status: 200, headers: [("ETag", "a\r\nSet-Cookie: x")])
        let text = String(decoding: HTTPResponseWriter.bytes(for: response, persistence: .keepAlive), as: UTF8.self)
        #expect(text.contains("ETag: aSet-Cookie: x\r\n"))
        #expect(!text.contains("\r\nSet-Cookie"))
    }

    @Test func errorBodyIsEscapedJSON() {
        let response = HTTPResponse.error(status: 400, message: "bad \"path\"\n")
        #expect(String(decoding: response.body, as: UTF8.self) == "{\"error\":\"bad \\\"path\\\"\\n\"}")
        #expect(response.headers.first?.1 == "application/json; charset=utf-8")
    }

    @Test func streamHeadIsCloseDelimited() {
        let head = String(
            decoding: HTTPResponseWriter.streamHead(status: 200, headers: [("Content-Type", "text/event-stream")]),
            as: UTF8.self)
        #expect(head == "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
    }
}
