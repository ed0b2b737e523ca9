// WireFrameAssemblerTests -- counted pieces join back into messages; keep-alives and oversize are handled.

import CanopyCore
import Testing

@Suite struct WireFrameAssemblerTests {
    @Test func countedPiecesJoinAndKeepAlivesAreNoMessage() throws {
        var assembler = WireFrameAssembler(maxMessageBytes: 100)
        #expect(try assembler.feed("0") == nil)
        #expect(try assembler.feed(#"{"t":"d"}"#) == #"{"t":"d"}"#)
        #expect(try assembler.feed("3") == nil)
        #expect(try assembler.feed("ab") == nil)
        #expect(try assembler.feed("cd") == nil)
        #expect(try assembler.feed("e") == "abcde")
        #expect(try assembler.feed("12") == nil)  // a count, even where a message could be a number
    }

    @Test func piecesBeyondTheLimitAreRefusedAndForgotten() throws {
        var assembler = WireFrameAssembler(maxMessageBytes: 4)
        #expect(try assembler.feed("2") == nil)
        #expect(try assembler.feed("abc") == nil)
        #expect(throws: WireFrameAssembler.Failure.tooLarge) { try assembler.feed("de") }
        #expect(try assembler.feed("next") == "next")
    }
}
