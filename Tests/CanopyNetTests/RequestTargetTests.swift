// RequestTargetTests -- splitting and percent-decoding request targets.
import Testing

@testable import CanopyNet

@Suite struct RequestTargetTests {
    @Test(arguments: [
        ("/a/b.json", "/a/b.json", ""),
        ("/a%2Fb%20c.json?x=%26&y", "/a/b c.json", "x=&|y="),
        ("/p?q=a+b%2Bc", "/p", "q=a+b+c"),
        ("/p?%C3%A9=%E2%82%AC&&z=", "/p", "é=€|z="),
        ("http://h:9000/x?ns=a", "/x", "ns=a"),
        ("https://h?ns=a", "/", "ns=a"),
        ("http://h", "/", ""),
        ("*", "*", ""),
        ("/f#frag", "/f", ""),
    ])
    func targetsDecodeOnce(raw: String, path: String, query: String) throws {
        let target = try RequestTarget.parse(ArraySlice(raw.utf8))
        #expect(target.path == path)
        #expect(target.query.map { "\($0.name)=\($0.value)" }.joined(separator: "|") == query)
    }

    @Test func doubleEncodingIsDecodedOnlyOnce() throws {
        let target = try RequestTarget.parse(ArraySlice("/a%2541?v=%2520".utf8))
        #expect(target.path == "/a%41")
        #expect(target.query.first?.value == "%20")
        #expect(target.rawPath == "/a%2541")
    }

    @Test(arguments: ["/%", "/%4", "/%G1", "/%FF", "ftp//x", "x"])
    func invalidTargetsAreRejected(raw: String) {
        #expect(throws: HTTPParseError.self) { try RequestTarget.parse(ArraySlice(raw.utf8)) }
    }
}
