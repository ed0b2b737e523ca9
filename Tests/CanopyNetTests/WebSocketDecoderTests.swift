// WebSocketDecoderTests -- RFC 6455 byte vectors, framing rules, close codes, limits and split points.
import Testing

@testable import CanopyNet

/// Builds a masked client frame.
func clientFrame(
    _ opcode: WebSocketOpcode, _ payload: [UInt8], isFinal: Bool = true, key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
) -> [UInt8] {
    var out: [UInt8] = []
    WebSocketFrameEncoder.encode(opcode, payload: payload, isFinal: isFinal, maskingKey: key, into: &out)
    return out
}

@Suite struct WebSocketDecoderTests {
    @Test func rfcMaskedHelloDecodes() {
        // RFC 6455 §5.7: a single-frame masked text message containing "Hello".
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        let result = WebSocketDecoder.decodeAll(bytes)
        #expect(result.events == [.text("Hello")])
        #expect(result.error == nil)
        #expect(clientFrame(.text, Array("Hello".utf8)) == bytes)
    }

    @Test func rfcUnmaskedVectorsDecodeOnTheClientSide() {
        let fragmented: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C, 0x80, 0x02, 0x6C, 0x6F]
        #expect(WebSocketDecoder.decodeAll(fragmented, expectsMaskedFrames: false).events == [.text("Hello")])
        let ping: [UInt8] = [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
        #expect(WebSocketDecoder.decodeAll(ping, expectsMaskedFrames: false).events == [.ping(Array("Hello".utf8))])
    }

    @Test func serverFramesUseShortestLengthForms() {
        for (count, header) in [
            (5, [0x82, 0x05]), (256, [0x82, 0x7E, 0x01, 0x00]), (65536, [0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0]),
        ] {
            var out: [UInt8] = []
            WebSocketFrameEncoder.encode(.binary, payload: [UInt8](repeating: 7, count: count), into: &out)
            #expect(Array(out.prefix(header.count)) == header.map(UInt8.init))
            #expect(out.count == header.count + count)
            let decoded = WebSocketDecoder.decodeAll(out, expectsMaskedFrames: false)
            #expect(decoded.events == [.binary([UInt8](repeating: 7, count: count))])
        }
    }

    @Test func controlFramesMayInterleaveFragments() {
        let bytes =
            clientFrame(.text, Array("Hel".utf8), isFinal: false) + clientFrame(.ping, [1, 2])
            + clientFrame(.continuation, Array("lo ".utf8), isFinal: false)
            + clientFrame(.continuation, Array("€".utf8))
            + clientFrame(.close, WebSocketFrameEncoder.closePayload(code: 1000, reason: "bye"))
        let result = WebSocketDecoder.decodeAll(bytes)
        #expect(result.events == [.ping([1, 2]), .text("Hello €"), .close(code: 1000, reason: "bye")])
        #expect(result.error == nil)
    }

    @Test func everySplitPointGivesTheSameEvents() throws {
        let bytes =
            clientFrame(.text, Array("first".utf8)) + clientFrame(.binary, [UInt8](repeating: 9, count: 300))
            + clientFrame(.text, Array("a".utf8), isFinal: false) + clientFrame(.pong, [])
            + clientFrame(.continuation, Array("b".utf8)) + clientFrame(.close, [])
        let expected = WebSocketDecoder.decodeAll(bytes).events
        #expect(expected.count == 5)
        for split in 0...bytes.count {
            var decoder = WebSocketDecoder(maxMessageBytes: 1 << 20)
            var events: [WebSocketEvent] = []
            decoder.append(bytes[0..<split])
            while let event = try decoder.next() { events.append(event) }
            decoder.append(bytes[split...])
            while let event = try decoder.next() { events.append(event) }
            #expect(events == expected, "split at \(split)")
        }
    }

    @Test(
        arguments: [
            ([0x81, 0x05] + Array("Hello".utf8), WebSocketError.protocolError(reason: "unmasked client frame")),
            ([0xC1, 0x80, 0, 0, 0, 0], .protocolError(reason: "reserved bits set")),
            ([0x83, 0x80, 0, 0, 0, 0], .protocolError(reason: "unknown opcode")),
            ([0x09, 0x80, 0, 0, 0, 0], .protocolError(reason: "fragmented control frame")),
            (
                [0x82, 0xFE, 0x00, 0x7D, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 125),
                .protocolError(reason: "payload length not in shortest form")
            ),
            (
                [0x89, 0xFE, 0x00, 0x80, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 128),
                .protocolError(reason: "control frame payload over 125 bytes")
            ),
            (
                [0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                .protocolError(reason: "payload length not in shortest form")
            ),
            (clientFrame(.continuation, [1]), .protocolError(reason: "continuation without a message")),
            (
                clientFrame(.text, [0x61], isFinal: false) + clientFrame(.text, [0x62]),
                .protocolError(reason: "new message inside a fragmented one")
            ),
            (clientFrame(.text, [0xC3, 0x28]), .invalidUTF8),
            (clientFrame(.text, [0xE2, 0x82], isFinal: false) + clientFrame(.continuation, [0x41]), .invalidUTF8),
            (clientFrame(.close, [0x03]), .protocolError(reason: "close payload of one byte")),
            (clientFrame(.close, [0x03, 0xED]), .protocolError(reason: "invalid close code")),  // 1005
            (clientFrame(.close, [0x03, 0xE8, 0xFF]), .invalidUTF8),
            (clientFrame(.binary, [UInt8](repeating: 0, count: 2000)), .messageTooBig),
            (
                clientFrame(.text, [UInt8](repeating: 0x61, count: 600), isFinal: false)
                    + clientFrame(.continuation, [UInt8](repeating: 0x61, count: 600)), .messageTooBig
            ),
        ] as [([UInt8], WebSocketError)])
    func badFramesCloseWithTheRightError(bytes: [UInt8], expected: WebSocketError) {
        let result = WebSocketDecoder.decodeAll(bytes, maxMessageBytes: 1024)
        #expect(result.error == expected)
    }

    @Test(arguments: [
        (WebSocketError.protocolError(reason: "x"), UInt16(1002)), (.invalidUTF8, 1007), (.messageTooBig, 1009),
    ])
    func errorsMapToCloseCodes(error: WebSocketError, code: UInt16) {
        #expect(error.closeCode == code)
    }

    @Test func oversizeFrameIsRefusedFromItsHeaderAlone() {
        // Only the 10-byte header of a 1 GiB frame has arrived.
        let header: [UInt8] = [0x82, 0xFF, 0, 0, 0, 0, 0x40, 0, 0, 0, 1, 2, 3, 4]
        #expect(WebSocketDecoder.decodeAll(header, maxMessageBytes: 1024).error == .messageTooBig)
    }

    @Test func closePayloadReasonIsCutOnACharacterBoundary() {
        let payload = WebSocketFrameEncoder.closePayload(code: 1001, reason: String(repeating: "é", count: 100))
        #expect(payload.count <= 125)
        #expect(String(validating: payload[2...], as: UTF8.self) != nil)
        #expect(payload[0] == 0x03 && payload[1] == 0xE9)
    }

    @Test func arbitraryBytesNeverCrashTheDecoder() {
        var seed: UInt64 = 42
        for _ in 0..<3000 {
            var bytes: [UInt8] = []
            for _ in 0..<(seed % 64) {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes.append(UInt8(truncatingIfNeeded: seed >> 56))
            }
            seed = seed &* 6_364_136_223_846_793_005 &+ 1
            _ = WebSocketDecoder.decodeAll(bytes, maxMessageBytes: 100)
        }
    }
}
