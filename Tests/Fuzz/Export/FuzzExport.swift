// FuzzExport -- libFuzzer target for export documents, what `canopy import` and `serve --demo` read
// (`ExportDocument.parse`) (Tests/fuzz.sh).
//
// Invariants: any input is read or refused with an error; a document that is read, serialized again and read
// back has the same namespace, time and data, and serializing that gives the same text.

@testable import CanopyServer
import CanopyCore
import FuzzSupport

@main enum Main { static func main() { runFuzzer(fuzz) } }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let document = try? ExportDocument.parse(Array(inputBytes(data, size))) else { return 0 }
    let text = document.serialized()
    let again: ExportDocument
    do {
        again = try ExportDocument.parse(Array(text.utf8))
    } catch {
        fatalError("a serialized export does not read back: \(error) -- \(text)")
    }
    guard again.namespace == document.namespace, again.exportedAt == document.exportedAt,
        equalAsWritten(document.data.json(export: true), again.data.json(export: true))
    else { fatalError("an export changes when read back: \(text)") }
    guard again.serialized() == text else { fatalError("serializing an export twice differs: \(text)") }
    return 0
}
