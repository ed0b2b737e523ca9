// LongPollRequestTests -- strict parsing of `/.lp` query parameters into requests.

import CanopyCore
import Testing

@testable import CanopyServer

@Suite struct LongPollRequestTests {
    func parse(_ query: String) throws(LongPollError) -> LongPollRequest {
        let pairs = query.split(separator: "&").map { item -> (name: String, value: String) in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
        return try LongPollRequest.parse(pairs, limits: LongPollLimits())
    }

    @Test func startCarriesTheCallbackNumber() throws {
        #expect(try parse("start=t&ser=123&cb=4&v=5&ns=app") == .start(callbackID: "4"))
        #expect(try parse("start=t&ser=1&v=5") == .start(callbackID: nil))
    }

    @Test(arguments: [
        "start=t&cb=4;alert(1)", "start=t&cb=", "start=t&cb=1e3", "start=t&cb=1&seg0=0&ts0=1&d0=e30.",
    ])
    func badStartsAreRefused(query: String) {
        #expect(throws: LongPollError.self) { try parse(query) }
    }

    @Test func pollsCarrySegmentsInIndexOrder() throws {
        let request = try parse("id=abc&pw=XYZ9&ser=7&seg1=6&ts1=2&d1=bb.&ns=x&seg0=5&ts0=2&d0=aa_-")
        let credentials = LongPollCredentials(id: "abc", password: "XYZ9")
        #expect(
            request
                == .poll(
                    credentials,
                    segments: [
                        LongPollSegment(number: 5, total: 2, data: "aa_-"),
                        LongPollSegment(number: 6, total: 2, data: "bb."),
                    ]))
        #expect(try parse("id=abc&pw=XYZ9&ser=8") == .poll(credentials, segments: []))
        #expect(try parse("dframe=t&id=abc&pw=XYZ9") == .disconnectFrame(credentials))
        #expect(try parse("disconn=t&id=abc&pw=XYZ9") == .disconnect(credentials))
    }

    @Test(arguments: [
        "id=abc&ser=1",  // no password
        "id=a'b&pw=x",  // not an identifier
        "id=abc&pw=x&seg0=0&ts0=1",  // no data
        "id=abc&pw=x&seg1=0&ts1=1&d1=e30.",  // index 0 missing
        "id=abc&pw=x&seg0=0&ts0=0&d0=e30.",  // zero segments
        "id=abc&pw=x&seg0=-1&ts0=1&d0=e30.",  // negative number
        "id=abc&pw=x&seg0=0&ts0=1&d0=e3+0",  // not web-safe base64
        "id=abc&pw=x&seg0=0&ts0=1&d0=e30.&d0=e30.",  // repeated parameter
        "id=abc&pw=x&seg0=0&ts0=99999&d0=e30.",  // more segments than a message may have
        "id=abc&pw=x&seg64=0&ts64=1&d64=e30.",  // index beyond the per-request limit
    ])
    func badPollsAreRefused(query: String) {
        #expect(throws: LongPollError.self) { try parse(query) }
    }

    @Test func arbitraryBytesNeverCrashTheParser() {
        var generator = SplitMix64(seed: 42)
        let alphabet = Array("abdegstpwirc0123456789=&-_.+%".unicodeScalars)
        for _ in 0..<2_000 {
            let length = Int(generator.next() % 80)
            let text = String(
                String.UnicodeScalarView(
                    (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }))
            _ = try? parse(text.isEmpty ? "x" : text)
        }
    }
}
