// FuzzNATS -- libFuzzer target for the NATS server-protocol parser (Tests/fuzz.sh).
//
// The first byte chooses how the rest arrives (whole, or in reads of 1 + byte % 32 bytes) and the limits (bit 7:
// a 64-byte control line and 128-byte payloads, else the defaults). Invariants: the parser never crashes; fed in
// pieces it yields the same operations and error as fed at once; nothing exceeds the limits; after an error it
// yields nothing more; a parsed message written again as MSG/HMSG parses to itself.

@testable import CanopyNATS
import FuzzSupport

@main enum Main { static func main() { runFuzzer(fuzz) } }

private func parseAll(_ bytes: [UInt8], limits: NATSParserLimits, piece: Int) -> ([NATSServerOperation], NATSProtocolError?) {
    var parser = NATSParser(limits: limits)
    var operations: [NATSServerOperation] = []
    var offset = 0
    repeat {
        let end = min(bytes.count, offset + piece)
        parser.append(bytes[offset..<end])
        offset = end
        do {
            while let operation = try parser.next() { operations.append(operation) }
        } catch {
            parser.append([0x50, 0x49, 0x4E, 0x47, 0x0D, 0x0A])  // PING: must not be parsed after an error
            guard (try? parser.next()) == nil else { fatalError("an operation after a protocol error") }
            return (operations, error)
        }
    } while offset < bytes.count
    return (operations, nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = inputBytes(data, size)
    guard let first = input.first else { return 0 }
    let bytes = Array(input.dropFirst())
    let limits = first & 0x80 != 0 ? NATSParserLimits(maxControlLine: 64, maxPayload: 128) : NATSParserLimits()
    let whole = parseAll(bytes, limits: limits, piece: max(1, bytes.count))
    let piece = 1 + Int(first & 0x1F)
    let pieces = parseAll(bytes, limits: limits, piece: piece)
    guard whole.0 == pieces.0, whole.1 == pieces.1 else {
        fatalError("parsing in pieces of \(piece) differs: \(String(describing: pieces.1)) vs \(String(describing: whole.1))")
    }
    for operation in whole.0 {
        guard case .message(let message) = operation else { continue }
        let headerBlock = (try? message.headers?.encoded()) ?? nil
        let size = message.payload.count + (headerBlock?.count ?? 0)
        guard size <= limits.maxPayload else { fatalError("a message over the payload limit") }
        var again: [UInt8] = []
        let reply = message.replyTo.map { " " + $0 } ?? ""
        if let headers = message.headers {
            guard let headerBlock else { fatalError("parsed headers do not encode: \(headers)") }
            again += "HMSG \(message.subject) \(message.sid)\(reply) \(headerBlock.count) \(size)\r\n".utf8
            again += headerBlock
        } else {
            again += "MSG \(message.subject) \(message.sid)\(reply) \(size)\r\n".utf8
        }
        again += message.payload + [0x0D, 0x0A]
        let reparsed = parseAll(again, limits: NATSParserLimits(maxControlLine: 1 << 20, maxPayload: 1 << 20), piece: again.count)
        guard reparsed.1 == nil, reparsed.0 == [.message(message)] else {
            fatalError("a message does not parse to itself: \(String(describing: reparsed.1))")
        }
    }
    return 0
}
