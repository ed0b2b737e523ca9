// HTTPRequestParserTests -- the incremental HTTP/1.1 parser: framing, split points, limits and errors.
import Testing

@testable import CanopyNet

/// A comparable digest of a parser event.
private func describe(_ event: HTTPParserEvent) -> String {
    switch event {
    case .continueExpected: return "100-continue"
    case .head(let r, let length, let expectsContinue):
        return "head \(r.method) \(r.path) length=\(length.map(String.init) ?? "chunked") continue=\(expectsContinue)"
    case .request(let r):
        let query = r.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
        let headers = r.headers.fields.map { "\($0.name):\($0.value)" }.joined(separator: "|")
        return "\(r.method) \(r.target) path=\(r.path) raw=\(r.rawPath) q=\(query) h=\(headers) "
            + "body=\(String(decoding: r.body, as: UTF8.self)) v=\(r.version) ka=\(r.keepAlive)"
    }
}

private func parse(_ text: String, limits: HTTPParserLimits = .init()) -> (events: [String], error: HTTPParseError?) {
    let result = HTTPRequestParser.parseAll(Array(text.utf8), limits: limits)
    return (result.events.map(describe), result.error)
}

@Suite struct HTTPRequestParserTests {
    static let pipelined =
        "GET /a.json?print=pretty&x=1+2%2B HTTP/1.1\r\nHost: h\r\n\r\n"
        + "\r\nPOST /b%20c.json HTTP/1.1\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\n{\"a\"}"
        + "PATCH /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n1;ext=1\r\ne\r\n0\r\nX-T: 1\r\n\r\n"
        + "PUT /d HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi"
        + "get http://example.com/e?y HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
        + "DELETE /f HTTP/1.1\r\nConnection: close\r\n\r\n"

    @Test func pipelinedStreamParsesIntoAllRequests() throws {
        let (events, error) = parse(Self.pipelined)
        #expect(error == nil)
        #expect(events.count == 7)
        #expect(
            events[0]
                == "GET /a.json?print=pretty&x=1+2%2B path=/a.json raw=/a.json q=print=pretty&x=1+2+ h=Host:h body= v=HTTP/1.1 ka=true"
        )
        #expect(events[1].hasPrefix("POST /b%20c.json path=/b c.json raw=/b%20c.json"))
        #expect(events[1].hasSuffix("body={\"a\"} v=HTTP/1.1 ka=true"))
        #expect(events[2].hasSuffix("h=Transfer-Encoding:chunked body=abcde v=HTTP/1.1 ka=true"))
        #expect(events[3] == "100-continue")
        #expect(events[4].hasSuffix("body=hi v=HTTP/1.1 ka=true"))
        #expect(
            events[5]
                == "GET http://example.com/e?y path=/e raw=/e q=y= h=Connection:keep-alive body= v=HTTP/1.0 ka=true")
        #expect(events[6].hasSuffix("ka=false"))
    }

    @Test func everySplitPointGivesTheSameRequests() throws {
        let bytes = Array(Self.pipelined.utf8)
        let expected = parse(Self.pipelined).events
        for split in 0...bytes.count {
            var parser = HTTPRequestParser()
            var events: [String] = []
            parser.append(bytes[0..<split])
            while let event = try parser.next() { events.append(describe(event)) }
            parser.append(bytes[split...])
            while let event = try parser.next() { events.append(describe(event)) }
            #expect(events == expected, "split at \(split)")
        }
    }

    @Test func byteByByteFeedingGivesTheSameRequests() throws {
        var parser = HTTPRequestParser()
        var events: [String] = []
        for byte in Self.pipelined.utf8 {
            parser.append([byte])
            while let event = try parser.next() { events.append(describe(event)) }
        }
        #expect(events == parse(Self.pipelined).events)
        #expect(parser.phase == .idle)
    }

    /// Found by Tests/Fuzz/HTTP: a line over the limit that ends in a bare LF was a 400 when it arrived at once
    /// and a 431 when it arrived in pieces (the limit is noticed before the line's end is seen).
    @Test func anOverlongLineIsRefusedAlikeHoweverItArrives() throws {
        let limits = HTTPParserLimits(maxHeaderBytes: 100, maxHeaderCount: 3, maxBodyBytes: 10)
        for raw in ["\r\n" + String(repeating: "a", count: 120) + "\n", "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 120) + "\n"] {
            #expect(parse(raw, limits: limits).error == .headersTooLarge)
            var parser = HTTPRequestParser(limits: limits)
            var failure: HTTPParseError?
            for byte in raw.utf8 where failure == nil {
                parser.append([byte])
                do { while try parser.next() != nil {} } catch { failure = error }
            }
            #expect(failure == .headersTooLarge)
        }
        // Within the limit, a bare LF is still malformed.
        #expect(parse("GET / HTTP/1.1\r\nX: a\n\r\n", limits: limits).error == .malformed(reason: "line not terminated by CRLF"))
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", HTTPParseError.malformed(reason: "obsolete header line folding")),
        ("GET / HTTP/1.1\r\nA : b\r\n\r\n", .malformed(reason: "invalid header name")),
        ("GET / HTTP/1.1\r\nA\r\n\r\n", .malformed(reason: "header line without ':'")),
        ("GET / HTTP/1.1\r\nA: b\u{1}c\r\n\r\n", .malformed(reason: "invalid header value")),
        ("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", .malformed(reason: "invalid header value")),
        ("GET / HTTP/1.1\nHost: x\n\n", .malformed(reason: "line not terminated by CRLF")),
        ("GET  / HTTP/1.1\r\n\r\n", .malformed(reason: "invalid request target")),
        ("GET / HTTP/1.1 \r\n\r\n", .malformed(reason: "invalid HTTP version")),
        ("G(T / HTTP/1.1\r\n\r\n", .malformed(reason: "invalid method")),
        ("GET /\r\n\r\n", .malformed(reason: "request line must be 'METHOD target HTTP/1.1'")),
        ("GET / HTTP/2.0\r\n\r\n", .versionNotSupported),
        ("GET / HTTP/1.x\r\n\r\n", .malformed(reason: "invalid HTTP version")),
        ("GET a/b HTTP/1.1\r\n\r\n", .malformed(reason: "request target must start with '/'")),
        ("GET /%zz HTTP/1.1\r\n\r\n", .malformed(reason: "invalid percent-encoding in path")),
        ("GET /%C3 HTTP/1.1\r\n\r\n", .malformed(reason: "invalid percent-encoding in path")),
        ("GET /?a=%4 HTTP/1.1\r\n\r\n", .malformed(reason: "invalid percent-encoding in query")),
        (
            "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
            .malformed(reason: "invalid or repeated Content-Length")
        ),
        ("POST / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\nx", .malformed(reason: "invalid or repeated Content-Length")),
        ("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", .malformed(reason: "invalid or repeated Content-Length")),
        ("POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\nx", .malformed(reason: "invalid or repeated Content-Length")),
        (
            "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            .malformed(reason: "both Content-Length and Transfer-Encoding")
        ),
        (
            "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            .malformed(reason: "unsupported Transfer-Encoding")
        ),
        (
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            .malformed(reason: "unsupported Transfer-Encoding")
        ),
        ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", .malformed(reason: "Transfer-Encoding in HTTP/1.0")),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .malformed(reason: "invalid chunk size")),
        (
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
            .malformed(reason: "chunk data not followed by CRLF")
        ),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2x\r\n", .malformed(reason: "invalid chunk extension")),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n", .bodyTooLarge),
    ])
    func malformedInputIsRejectedWithItsReason(raw: String, expected: HTTPParseError) {
        #expect(parse(raw).error == expected)
    }

    @Test func limitsMapToTheirStatuses() {
        let limits = HTTPParserLimits(maxHeaderBytes: 100, maxHeaderCount: 3, maxBodyBytes: 10)
        let longHeader = "GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 100))\r\n\r\n"
        #expect(parse(longHeader, limits: limits).error == .headersTooLarge)
        // An unterminated head is refused as soon as it exceeds the limit, not when it ends.
        let unterminated = "GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 200)
        #expect(parse(unterminated, limits: limits).error == .headersTooLarge)
        let manyHeaders = "GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"
        #expect(parse(manyHeaders, limits: limits).error == .headersTooLarge)
        let bigLength = "POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n"
        #expect(parse(bigLength, limits: limits).error == .bodyTooLarge)
        let bigChunks = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n5\r\nabcde\r\n"
        #expect(parse(bigChunks, limits: limits).error == .bodyTooLarge)
        let manyTrailers =
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"
        #expect(parse(manyTrailers, limits: limits).error == .headersTooLarge)
        let exactBody = "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789"
        #expect(parse(exactBody, limits: limits).error == nil)
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\n\r\n", true),
        ("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false),
        ("GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n", false),
        ("GET / HTTP/1.0\r\n\r\n", false),
        ("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
        ("GET / HTTP/1.2\r\n\r\n", true),
    ])
    func keepAliveFollowsVersionAndConnectionField(raw: String, keepAlive: Bool) throws {
        let events = HTTPRequestParser.parseAll(Array(raw.utf8)).events
        guard case .request(let request) = try #require(events.first) else {
            Issue.record("expected a request")
            return
        }
        #expect(request.keepAlive == keepAlive)
    }

    @Test func failedParserStaysFailedAndPhaseTracksProgress() throws {
        var parser = HTTPRequestParser()
        #expect(parser.phase == .idle)
        parser.append(Array("POST / HTTP/1.1\r\nContent-Le".utf8))
        #expect(try parser.next() == nil)
        #expect(parser.phase == .head)
        parser.append(Array("ngth: 4\r\n\r\nab".utf8))
        #expect(try parser.next() == nil)
        #expect(parser.phase == .body)
        parser.append(Array("cdBAD\r\n".utf8))
        #expect(try parser.next() != nil)
        #expect(throws: HTTPParseError.self) { try parser.next() }
        parser.append(Array("GET / HTTP/1.1\r\n\r\n".utf8))
        #expect(throws: HTTPParseError.self) { try parser.next() }
    }

    @Test func upgradeLeavesFollowingBytesForTheNewProtocol() throws {
        var parser = HTTPRequestParser()
        parser.append(Array("GET /.ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n\u{81}\u{05}".utf8))
        #expect(try parser.next() != nil)
        #expect(parser.takeRemainingBytes() == Array("\u{81}\u{05}".utf8))
    }

    @Test func arbitraryBytesNeverCrashTheParser() {
        // A deterministic pseudo-random corpus, mutated from a valid pipelined stream.
        let base = Array(Self.pipelined.utf8)
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func nextRandom() -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: seed >> 33)
        }
        for _ in 0..<2000 {
            var bytes = base
            for _ in 0..<(1 + nextRandom() % 8) {
                let index = nextRandom() % bytes.count
                switch nextRandom() % 3 {
                case 0: bytes[index] = UInt8(truncatingIfNeeded: nextRandom())
                case 1: bytes.remove(at: index)
                default: bytes.insert(UInt8(truncatingIfNeeded: nextRandom()), at: index)
                }
            }
            _ = HTTPRequestParser.parseAll(
                bytes, limits: HTTPParserLimits(maxHeaderBytes: 200, maxHeaderCount: 4, maxBodyBytes: 64))
        }
    }
}

extension HTTPParserEvent: Equatable {
    public static func == (a: HTTPParserEvent, b: HTTPParserEvent) -> Bool {
        describe(a) == describe(b)
    }
}
