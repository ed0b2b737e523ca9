// FuzzWebSocket -- libFuzzer target for the RFC 6455 frame decoder (Tests/fuzz.sh).
//
// The first byte chooses the direction (bit 0: frames from a client, masked, or from a server) and how the
// rest arrives: whole, or in reads of 1 + (byte >> 1) % 16 bytes. Invariants: the decoder never crashes; fed in
// pieces it yields the same events and error as fed at once; no message exceeds the limit; a decoded text or
// binary message encoded again decodes to itself.

@testable import CanopyNet
import FuzzSupport

@main enum Main { static func main() { runFuzzer(fuzz) } }

private let maxMessageBytes = 4096

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = inputBytes(data, size)
    guard let first = input.first else { return 0 }
    let masked = first & 1 == 0
    let bytes = Array(input.dropFirst())
    let whole = WebSocketDecoder.decodeAll(bytes, maxMessageBytes: maxMessageBytes, expectsMaskedFrames: masked)
    let pieceSize = 1 + Int(first >> 1) % 16

    var decoder = WebSocketDecoder(maxMessageBytes: maxMessageBytes, expectsMaskedFrames: masked)
    var events: [WebSocketEvent] = []
    var failure: WebSocketError?
    var offset = 0
    reading: while offset < bytes.count {
        decoder.append(bytes[offset..<min(offset + pieceSize, bytes.count)])
        offset += pieceSize
        do {
            while let event = try decoder.next() { events.append(event) }
        } catch {
            failure = error
            break reading
        }
    }
    guard failure == whole.error, events == whole.events else {
        fatalError("decoding in pieces of \(pieceSize) differs: \(String(describing: failure)) vs \(String(describing: whole.error))")
    }
    for event in events {
        switch event {
        case .text(let text):
            guard text.utf8.count <= maxMessageBytes else { fatalError("text message over the limit") }
            var frames = WebSocketFrames()
            frames.appendText(Array(text.utf8))
            let again = WebSocketDecoder.decodeAll(frames.bytes, maxMessageBytes: maxMessageBytes, expectsMaskedFrames: false)
            guard again.error == nil, again.events == [event] else { fatalError("text message does not re-decode") }
        case .binary(let payload):
            guard payload.count <= maxMessageBytes else { fatalError("binary message over the limit") }
            var frames = WebSocketFrames()
            frames.appendBinary(payload)
            let again = WebSocketDecoder.decodeAll(frames.bytes, maxMessageBytes: maxMessageBytes, expectsMaskedFrames: false)
            guard again.error == nil, again.events == [event] else { fatalError("binary message does not re-decode") }
        case .ping(let payload), .pong(let payload):
            guard payload.count <= 125 else { fatalError("control frame over 125 bytes") }
        case .close: break
        }
    }
    return 0
}
