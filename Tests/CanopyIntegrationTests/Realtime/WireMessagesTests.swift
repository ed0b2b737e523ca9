// WireMessagesTests -- messages serialized and framed once for a fan-out: pieces, tags, and the `d` push shape.
import CanopyCore
import CanopyNet
import Testing

@testable import CanopyServer

@Suite struct WireMessagesTests {
    /// The text frames in `frames`, decoded the way a client reads them.
    private func texts(of frames: WebSocketFrames) throws -> [String] {
        var decoder = WebSocketDecoder(maxMessageBytes: 1 << 24, expectsMaskedFrames: false)
        decoder.append(frames.bytes)
        var out: [String] = []
        while let event = try decoder.next() {
            guard case .text(let text) = event else {
                Issue.record("unexpected event \(event)")
                break
            }
            out.append(text)
        }
        return out
    }

    @Test func shortMessagesTravelWhole() throws {
        let messages = WireMessages(texts: [Array(#"{"a":1}"#.utf8), Array(#"{"b":2}"#.utf8)])
        #expect(try texts(of: messages.frames) == [#"{"a":1}"#, #"{"b":2}"#])
        #expect(messages.texts.map { String(decoding: $0, as: UTF8.self) } == [#"{"a":1}"#, #"{"b":2}"#])
    }

    @Test(arguments: [
        // (repeated scalar, count, expected frames): 2-byte scalars count one UTF-16 unit each, 4-byte ones two.
        ("é", 16_384, 1),  // 32 768 UTF-8 bytes but exactly 16 384 units: one frame
        ("é", 16_385, 3),  // one unit too many: a count and two pieces
        ("😀", 8_192, 1),  // 16 384 units
        ("😀", 8_193, 3),  // a surrogate pair never straddles a cut
        ("x", 40_000, 4),  // 3 pieces
    ])
    func longMessagesAreCutIntoCountedPiecesOnScalarBoundaries(scalar: String, count: Int, frames: Int) throws {
        let message = String(repeating: scalar, count: count)
        let decoded = try texts(of: WireMessages(texts: [Array(message.utf8)]).frames)
        #expect(decoded.count == frames)
        if frames == 1 {
            #expect(decoded == [message])
            return
        }
        #expect(decoded.first == String(frames - 1))
        let pieces = decoded.dropFirst()
        #expect(pieces.allSatisfy { $0.utf16.count <= WireMessages.maxFrameCharacters })
        #expect(pieces.joined() == message)
    }

    @Test func pushesAreClosedWithTheirTag() throws {
        let prefixes = WireMessages.dataMessagePrefixes([.set(path: Path(segments: ["room", "m1"]), value: try Node.from(json: ["x": 1]))])
        let untagged = try texts(of: WireMessages(closing: prefixes, tag: nil).frames)
        let tagged = try texts(of: WireMessages(closing: prefixes, tag: 7).frames)
        #expect(untagged == [#"{"t":"d","d":{"a":"d","b":{"p":"/room/m1","d":{"x":1}}}}"#])
        #expect(tagged == [#"{"t":"d","d":{"a":"d","b":{"p":"/room/m1","d":{"x":1},"t":7}}}"#])
        let parsed = try JSONValue.parse(try #require(tagged.first))
        #expect(parsed["d"]?["b"]?["t"] == 7)
        #expect(parsed["d"]?["b"]?["d"] == ["x": 1])
    }
}
