// WireTests -- framing (counted pieces both ways) and parsing server messages, including malformed input.

import CanopyCore
import Testing

@testable import CanopyClient

@Suite struct WireTests {
    @Test func longMessagesTravelAsCountedPiecesAndReassemble() throws {
        let text = #"{"t":"d","d":{"a":"d","b":{"p":"/x","d":""# + String(repeating: "é😀a", count: 9000) + #""}}}"#
        let frames = WireFraming.frames(for: text)
        #expect(frames.count > 2)
        #expect(Int(frames[0]) == frames.count - 1)
        #expect(frames.dropFirst().allSatisfy { $0.utf16.count <= WireFraming.maxFrameUnits })
        var assembler = FrameAssembler()
        var out: [String] = []
        for frame in frames { if let message = try assembler.feed(frame) { out.append(message) } }
        #expect(out == [text])
        #expect(WireFraming.frames(for: "short") == ["short"])
    }

    @Test func parsesEveryServerMessageKind() throws {
        #expect(try ServerMessage.parse(#"{"t":"c","d":{"t":"h","d":{"ts":5,"v":"5","h":"x","s":"abc"}}}"#)
            == .handshake(timestamp: 5, session: "abc"))
        #expect(try ServerMessage.parse(#"{"t":"c","d":{"t":"r","d":"host:1"}}"#) == .control(type: "r", payload: "host:1"))
        #expect(try ServerMessage.parse(#"{"t":"d","d":{"r":3,"b":{"s":"ok","d":{}}}}"#)
            == .reply(request: 3, status: "ok", data: [:]))
        #expect(try ServerMessage.parse(#"{"t":"d","d":{"a":"d","b":{"p":"/a","d":1,"t":2}}}"#)
            == .push(action: "d", body: ["p": "/a", "d": 1, "t": 2]))
    }

    @Test(arguments: ["", "0", "[]", "{}", #"{"t":"x","d":{}}"#, #"{"t":"d","d":{"r":1,"b":{}}}"#, #"{"t":"c","d":{}}"#, "{\"t\":"])
    func refusesMalformedMessages(text: String) {
        #expect(throws: ServerMessage.Malformed.self) { try ServerMessage.parse(text) }
    }

    @Test func randomBytesNeverCrashTheParsers() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,tdcrabsph0123456789 "#)
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<40, using: &generator)
            let text = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            _ = try? ServerMessage.parse(text)
            var assembler = FrameAssembler()
            _ = try? assembler.feed(text)
        }
    }
}
