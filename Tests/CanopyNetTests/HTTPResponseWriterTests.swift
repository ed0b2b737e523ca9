// HTTPResponseWriterTests -- serialization of responses and stream heads.
import Testing

@testable import CanopyNet

@Suite struct HTTPResponseWriterTests {
    @Test func responseHasStatusLineLengthAndNoFramingFromCaller() {
        let response = HTTPResponse(
            status: 200,
            headers: [("Content-Type", "application/json"), ("content-length", "999"), ("Connection", "x")],
            body: Array("{}".utf8))
        let bytes = HTTPResponseWriter.bytes(for: response, persistence: .keepAlive, date: nil)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
    }

    @Test func closingAndHTTP10KeepAliveSayConnection() {
        let response = HTTPResponse(status: 404)
        let closing = String(
            decoding: HTTPResponseWriter.bytes(for: response, persistence: .close, date: nil), as: UTF8.self)
        #expect(closing == "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        let kept = String(
            decoding: HTTPResponseWriter.bytes(for: response, persistence: .keepAliveHTTP10, date: nil), as: UTF8.self)
        #expect(kept.contains("\r\nConnection: keep-alive\r\n"))
    }

    @Test func noContentHasNoLengthAndNoBody() {
        let text = String(
            decoding: HTTPResponseWriter.bytes(
                for: HTTPResponse(status: 204, body: [1, 2]), persistence: .keepAlive, date: nil),
            as: UTF8.self)
        #expect(text == "HTTP/1.1 204 No Content\r\n\r\n")
    }

    @Test func headerValuesCannotSplitTheResponse() {
        let response = HTTPResponse(status: 200, headers: [("ETag", "a\r\nSet-Cookie: x")])
        let bytes = HTTPResponseWriter.bytes(for: response, persistence: .keepAlive, date: nil)
        let text = String(decoding: bytes, as: UTF8.self)
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
            decoding: HTTPResponseWriter.streamHead(
                status: 200, headers: [("Content-Type", "text/event-stream")], date: nil),
            as: UTF8.self)
        #expect(head == "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
    }

    /// RFC 9110 §5.6.7's own example, and a date after 2038 (64-bit `time_t`).
    @Test func datesAreIMFFixdate() {
        #expect(HTTPDate.format(secondsSince1970: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(secondsSince1970: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(secondsSince1970: 4_102_444_800) == "Fri, 01 Jan 2100 00:00:00 GMT")
    }

    /// Every response carries the current `Date` unless the caller set one.
    @Test func responsesCarryADate() {
        let bytes = HTTPResponseWriter.bytes(for: HTTPResponse(status: 200), persistence: .keepAlive)
        let text = String(decoding: bytes, as: UTF8.self)
        let line = text.split(separator: "\r\n").first { $0.hasPrefix("Date: ") }
        #expect(line?.hasSuffix(" GMT") == true)
        #expect(line.map { String($0.dropFirst(6)).utf8.count } == 29)
        let own = HTTPResponse(status: 200, headers: [("date", "Thu, 01 Jan 1970 00:00:00 GMT")])
        let mine = String(decoding: HTTPResponseWriter.bytes(for: own, persistence: .keepAlive), as: UTF8.self)
        #expect(mine.components(separatedBy: "ate: ").count == 2)
        let stream = String(decoding: HTTPResponseWriter.streamHead(status: 200, headers: []), as: UTF8.self)
        #expect(stream.contains("\r\nDate: "))
    }
}
