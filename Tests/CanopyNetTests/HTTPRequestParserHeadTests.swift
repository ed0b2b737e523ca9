// HTTPRequestParserHeadTests -- heads reported before their body, and bodies read and dropped instead of kept.
import Testing

@testable import CanopyNet

@Suite struct HTTPRequestParserHeadTests {
    private func events(_ parser: inout HTTPRequestParser) throws -> [HTTPParserEvent] {
        var out: [HTTPParserEvent] = []
        while let event = try parser.next() { out.append(event) }
        return out
    }

    @Test func aHeadWhoseBodyFollowsIsReportedBeforeTheBody() throws {
        var parser = HTTPRequestParser(reportsHeads: true)
        parser.append(Array("PUT /a HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n".utf8))
        let first = try events(&parser)
        try #require(first.count == 1)
        guard case .head(let head, let length, let expectsContinue) = first[0] else {
            Issue.record("expected a head, got \(first[0])")
            return
        }
        #expect(head.path == "/a" && head.body.isEmpty && length == 5 && expectsContinue)
        parser.append(Array("hello".utf8))
        guard case .request(let request)? = try events(&parser).first else {
            Issue.record("expected the request")
            return
        }
        #expect(request.body == Array("hello".utf8))
    }

    @Test func headsWithoutBodiesAndChunkedHeadsAreReportedAsSuch() throws {
        var parser = HTTPRequestParser(reportsHeads: true)
        parser.append(Array("GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
        let parsed = try events(&parser)
        try #require(parsed.count == 2)
        guard case .request(let get) = parsed[0], case .head(let post, let length, false) = parsed[1] else {
            Issue.record("unexpected events \(parsed)")
            return
        }
        #expect(get.path == "/a" && post.path == "/b" && length == nil)
    }

    @Test(arguments: [
        "PUT /a HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789",
        "PUT /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n0123\r\n6\r\n456789\r\n0\r\n\r\n",
    ])
    func aDiscardedBodyIsReadButNotKeptAndTheNextRequestFollows(_ text: String) throws {
        var parser = HTTPRequestParser(reportsHeads: true)
        parser.append(Array(text.prefix(text.count - 8).utf8))
        guard case .head? = try parser.next() else {
            Issue.record("expected a head")
            return
        }
        parser.discardBody()
        _ = try parser.next()
        #expect(parser.currentBodyByteCount == 0)
        parser.append(Array((String(text.suffix(8)) + "GET /next HTTP/1.1\r\n\r\n").utf8))
        let rest = try events(&parser)
        try #require(rest.count == 2)
        guard case .request(let dropped) = rest[0], case .request(let next) = rest[1] else {
            Issue.record("unexpected events \(rest)")
            return
        }
        #expect(dropped.body.isEmpty)
        #expect(next.path == "/next")
    }

    @Test func aDiscardedChunkedBodyStillCountsAgainstTheBodyLimit() throws {
        var parser = HTTPRequestParser(limits: HTTPParserLimits(maxBodyBytes: 8), reportsHeads: true)
        parser.append(Array("PUT /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
        _ = try parser.next()
        parser.discardBody()
        parser.append(Array("5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n".utf8))
        #expect(throws: HTTPParseError.bodyTooLarge) { _ = try events(&parser) }
    }
}
