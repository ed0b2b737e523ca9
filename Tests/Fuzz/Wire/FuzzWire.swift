// FuzzWire -- libFuzzer target for the server's decoding of wire-protocol client messages (Tests/fuzz.sh):
// frame reassembly, `WireInbound.decode`, then what each action reads from its body -- the path, the query
// (`QuerySpec.fromWire`, evaluated on a fixture tree), the write data (`WriteBuilder`), a transaction's hash.
//
// The input is a sequence of WebSocket text frames separated by newlines. Invariants: nothing crashes; a
// reassembled message never exceeds the limit; queries round-trip and evaluate like the reference
// (`checkQuery`); a write that builds yields a tree that loads from its own JSON.

@testable import CanopyServer
import CanopyCore
import FuzzSupport

@main enum Main { static func main() { runFuzzer(fuzz) } }

private let maxMessageBytes = 8192

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var assembler = WireFrameAssembler(maxMessageBytes: maxMessageBytes)
    for frame in pieces(inputBytes(data, size), separator: UInt8(ascii: "\n")) {
        guard let text = String(validating: frame, as: UTF8.self) else { continue }
        let message: String?
        do {
            message = try assembler.feed(text)
        } catch {
            continue
        }
        guard let message else { continue }
        guard message.utf8.count <= maxMessageBytes else { fatalError("a reassembled message is over the limit") }
        guard case .request(let action, _, let body)? = WireInbound.decode(message) else { continue }
        handle(action, body)
    }
    return 0
}

private func handle(_ action: String, _ body: JSONValue) {
    switch action {
    case Wire.Action.listen, Wire.Action.legacyListen, Wire.Action.get:
        guard let path = path(body, allowPriority: false) else { return }
        guard let q = body[Wire.Key.query], case .object(let members) = q, !members.isEmpty,
            let spec = try? QuerySpec.fromWire(q)
        else { return }
        checkQuery(spec, on: fixtureRoot.node(at: path))
        checkQuery(spec, on: fixtureRoot)
    case Wire.Action.put, Wire.Action.onDisconnectPut:
        guard let path = path(body, allowPriority: true) else { return }
        if let hash = body[Wire.Key.hash]?.stringValue {
            _ = WriteCondition.hash(hash, at: path).holds(in: fixtureRoot)
        }
        build(.set(path: path, data: body[Wire.Key.data] ?? .null))
    case Wire.Action.merge, Wire.Action.onDisconnectMerge:
        guard let path = path(body, allowPriority: false) else { return }
        build(.update(path: path, data: body[Wire.Key.data] ?? .null))
    case Wire.Action.unlisten, Wire.Action.legacyUnlisten, Wire.Action.onDisconnectCancel:
        _ = path(body, allowPriority: false)
    default: break
    }
}

private func path(_ body: JSONValue, allowPriority: Bool) -> Path? {
    guard let text = body[Wire.Key.path]?.stringValue else { return nil }
    return try? Path(parsing: text, allowPriorityLeaf: allowPriority)
}

private func build(_ operation: WriteOperation) {
    guard let built = try? WriteBuilder.build(operation, root: fixtureRoot, now: 1_700_000_000_000, publisher: nil)
    else { return }
    let json = built.newRoot.json(export: true)
    guard let reloaded = try? Node.from(json: json), reloaded == built.newRoot else {
        fatalError("a built tree does not reload from its export JSON")
    }
}
