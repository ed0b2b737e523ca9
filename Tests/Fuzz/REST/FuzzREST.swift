// FuzzREST -- libFuzzer target for the REST query parameters: the request target as the HTTP parser decodes it,
// the data path, `QuerySpec.fromREST` (evaluated on a fixture tree) and `RESTParameters` (`timeout`,
// `writeSizeLimit`, `download`) with its write budget (Tests/fuzz.sh).
//
// The input is a request target after the leading `/` (`users.json?orderBy="age"&limitToFirst=2`), then
// optionally a newline and a JSON body for the write budget. Invariants: nothing crashes; a query's wire form
// decodes to the same query and evaluates like the reference (`checkQuery`).

@testable import CanopyServer
import CanopyCore
import CanopyNet
import FuzzSupport

@main enum Main { static func main() { runFuzzer(fuzz) } }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let parts = Array(inputBytes(data, size)).split(
        separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false)
    guard let target = parts.first else { return 0 }
    let head = Array("GET /".utf8) + target + Array(" HTTP/1.1\r\nHost: fuzz\r\n\r\n".utf8)
    guard case .request(let request)? = HTTPRequestParser.parseAll(head).events.first,
        request.path.hasSuffix(".json")
    else { return 0 }
    var params: [String: String] = [:]
    for item in request.query { params[item.name] = item.value }
    for value in params.values { _ = RESTParameters.printable(value) }
    guard let path = try? Path(parsing: String(request.path.dropLast(".json".count)), allowPriorityLeaf: true) else {
        return 0
    }
    if let spec = try? QuerySpec.fromREST(params) {
        checkQuery(spec, on: fixtureRoot.node(at: path))
        checkQuery(spec, on: fixtureRoot)
    }
    guard let parameters = try? RESTParameters(params) else { return 0 }
    let body = parts.count > 1 ? (try? JSONValue.parse(parts[1])) ?? .null : .null
    _ = try? parameters.writeSizeLimit.check(.set(path: path, data: body), in: fixtureRoot)
    _ = try? parameters.writeSizeLimit.check(.update(path: path, data: body), in: fixtureRoot)
    return 0
}
