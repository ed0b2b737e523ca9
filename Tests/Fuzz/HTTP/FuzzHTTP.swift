// FuzzHTTP -- libFuzzer target for the HTTP/1.1 request parser and what the server reads from a parsed request
// (request target decoding, the WebSocket upgrade check) (Tests/fuzz.sh).
//
// The first byte chooses how the rest arrives: whole, or in reads of 1 + (byte % 16) bytes. Invariants: the
// parser never crashes; fed in pieces it produces the same requests and the same error as fed at once;
// bodies respect the limits.

@testable import CanopyNet
import FuzzSupport

@main enum Main { static func main() { runFuzzer(fuzz) } }

/// Small limits, so the fuzzer reaches them.
private let limits = HTTPParserLimits(maxHeaderBytes: 512, maxHeaderCount: 8, maxBodyBytes: 1024)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = inputBytes(data, size)
    guard let first = input.first else { return 0 }
    let bytes = Array(input.dropFirst())
    let whole = HTTPRequestParser.parseAll(bytes, limits: limits)
    let pieceSize = 1 + Int(first % 16)

    var parser = HTTPRequestParser(limits: limits)
    var events: [HTTPParserEvent] = []
    var failure: HTTPParseError?
    var offset = 0
    reading: while offset < bytes.count {
        parser.append(bytes[offset..<min(offset + pieceSize, bytes.count)])
        offset += pieceSize
        do {
            while let event = try parser.next() { events.append(event) }
        } catch {
            failure = error
            break reading
        }
    }
    guard failure == whole.error, events.map(summary) == whole.events.map(summary) else {
        fatalError("parsing in pieces of \(pieceSize) differs: \(String(describing: failure)) vs \(String(describing: whole.error))")
    }
    for case .request(let request) in events {
        guard request.body.count <= limits.maxBodyBytes else { fatalError("body over the limit") }
        _ = try? WebSocketHandshake.validate(request)
        _ = try? RequestTarget.parse(ArraySlice(request.target.utf8))
    }
    return 0
}

/// What a request is, for comparing two parses.
private func summary(_ event: HTTPParserEvent) -> String {
    switch event {
    case .continueExpected: return "100-continue"
    case .head(let r, let bodyLength, let expectsContinue):
        return "head \(r.method) \(r.target) \(bodyLength.map(String.init) ?? "-") \(expectsContinue)"
    case .request(let r):
        let headers = r.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
        let query = r.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
        return "\(r.method) \(r.target) \(r.path) \(r.rawPath) \(query) \(r.version) \(r.keepAlive)\n\(headers)\n\(r.body)"
    }
}
