// FuzzJSON -- libFuzzer target for the JSON parser, strict and in the `.rules` dialect (Tests/fuzz.sh).
//
// Invariants: any input parses or throws; a parsed value written back (compact and pretty) parses again, in
// the strict dialect, to an equal value (`equalAsWritten`), and writing that gives the same bytes again.

import CanopyCore
import FuzzSupport

@main enum Main { static func main() { runFuzzer(fuzz) } }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = inputBytes(data, size)
    check(bytes, options: JSONParseOptions(maxDepth: 64))
    check(bytes, options: .rules)
    return 0
}

private func check(_ bytes: UnsafeBufferPointer<UInt8>, options: JSONParseOptions) {
    guard let value = try? JSONValue.parse(bytes, options: options) else { return }
    var compact: [UInt8] = []
    value.write(into: &compact)
    let again: JSONValue
    do {
        again = try JSONValue.parse(compact, options: JSONParseOptions(maxDepth: options.maxDepth))
    } catch {
        fatalError("written JSON does not parse: \(error) -- \(String(decoding: compact, as: UTF8.self))")
    }
    guard equalAsWritten(value, again) else {
        fatalError("round trip changed the value: \(String(decoding: compact, as: UTF8.self))")
    }
    var rewritten: [UInt8] = []
    again.write(into: &rewritten)
    guard rewritten == compact else {
        fatalError(
            "the writer is not canonical: \(String(decoding: compact, as: UTF8.self)) then \(String(decoding: rewritten, as: UTF8.self))")
    }
    let pretty = value.serialized(pretty: true)
    guard let fromPretty = try? JSONValue.parse(pretty, options: JSONParseOptions(maxDepth: options.maxDepth)),
        equalAsWritten(value, fromPretty)
    else { fatalError("pretty-printed JSON does not round-trip: \(pretty)") }
}
