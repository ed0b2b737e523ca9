// RESTParameters -- the Firebase REST query parameters that are not queries: `timeout`, `writeSizeLimit`,
// `download`, and the `X-HTTP-Method-Override` a POST may carry. Each is validated once, when the request is
// parsed, so a malformed one is a 400 before anything is read or written.
//
//   timeout=<n>ms|<n>s|<n>min     a read that has not been answered after this long fails with 400 (max 15 min)
//   writeSizeLimit=tiny|small|medium|large|unlimited
//                                 a write whose estimated size exceeds the limit's budget fails with 400
//   download=<file name>          the answer carries `Content-Disposition: attachment; filename="<name>"`

import CanopyCore
import CanopyNet

/// The validated non-query parameters of a data request.
struct RESTParameters {
    /// `timeout`, in milliseconds.
    var timeoutMilliseconds: Int64?
    /// `writeSizeLimit`.
    var writeSizeLimit: WriteSizeLimit = .unlimited
    /// `download`: the file name to offer.
    var download: String?

    /// The longest `timeout` Firebase accepts: 15 minutes.
    static let maximumTimeoutMilliseconds: Int64 = 15 * 60 * 1000

    init(_ params: [String: String]) throws(RESTError) {
        if let text = params["timeout"] { timeoutMilliseconds = try Self.timeout(text) }
        if let text = params["writeSizeLimit"] {
            guard let limit = WriteSizeLimit(rawValue: text) else {
                throw RESTError(
                    400, "Invalid writeSizeLimit '\(Self.printable(text))': use tiny, small, medium, large or unlimited.")
            }
            writeSizeLimit = limit
        }
        if let name = params["download"] {
            // A file name for a header value: no quotes, backslashes or control characters, at most 255 bytes.
            guard !name.isEmpty, name.utf8.count <= 255,
                name.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0 != "\"" && $0 != "\\" && $0.value != 0x7F })
            else {
                throw RESTError(400, "Invalid download file name: use 1 to 255 characters without quotes or controls.")
            }
            download = name
        }
    }

    /// Parses `<digits><unit>` with unit `ms`, `s` or `min`; more than 15 minutes, zero or anything else is a 400.
    static func timeout(_ text: String) throws(RESTError) -> Int64 {
        let units: [(suffix: String, milliseconds: Int64)] = [("ms", 1), ("min", 60_000), ("s", 1000)]
        for unit in units where text.hasSuffix(unit.suffix) {
            let digits = text.dropLast(unit.suffix.count)
            // At most 7 digits: no value that fits 15 minutes needs more, and nothing below can overflow.
            guard !digits.isEmpty, digits.count <= 7, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                let count = Int64(digits), count > 0
            else { break }
            let milliseconds = count * unit.milliseconds
            guard milliseconds <= maximumTimeoutMilliseconds else {
                throw RESTError(400, "timeout \(text) is longer than the maximum of 15min.")
            }
            return milliseconds
        }
        throw RESTError(400, "Invalid timeout '\(printable(text))': use a positive number with ms, s or min (e.g. 3s).")
    }

    /// At most 40 printable ASCII characters of a client's text, for an error message.
    static func printable(_ text: String) -> String {
        String(text.unicodeScalars.prefix(40).map { $0.isASCII && $0.value >= 0x20 ? Character($0) : "?" })
    }
}

/// Firebase's write size limits. Firebase aborts a write that it estimates would take longer than the target
/// time; Canopy estimates a write's size as the number of stored nodes it removes and writes, and gives each limit
/// a budget of nodes (`maximumNodes`), documented in the README.
enum WriteSizeLimit: String {
    case tiny, small, medium, large, unlimited

    /// The largest write (nodes removed plus nodes written) the limit allows; nil for unlimited.
    var maximumNodes: Int? {
        switch self {
        case .tiny: 1_000
        case .small: 10_000
        case .medium: 30_000
        case .large: 60_000
        case .unlimited: nil
        }
    }

    /// Refuses `operation` against `root` when its estimated size exceeds the limit.
    func check(_ operation: WriteOperation, in root: Node) throws(RESTError) {
        guard let limit = maximumNodes else { return }
        var size = 0
        func add(_ path: Path, _ data: JSONValue) {
            size += root.node(at: path).leafCount(upTo: limit + 1 - min(size, limit))
            size += data.nodeCount(upTo: limit + 1)
        }
        switch operation {
        case .set(let path, let data):
            add(path, data)
        case .update(let path, let data):
            for member in data.members ?? [] {
                guard let relative = try? Path(parsing: member.key, allowPriorityLeaf: true) else { continue }
                add(path.appending(relative), member.value)
            }
        case .admin:
            return
        }
        guard size <= limit else {
            throw RESTError(
                400,
                "write_too_big: this write changes more than \(limit) nodes, the budget of writeSizeLimit=\(rawValue).")
        }
    }
}

extension Node {
    /// The number of stored nodes (leaves and priorities) in this subtree, counting no further than `limit`.
    func leafCount(upTo limit: Int) -> Int {
        if isLeaf { return 1 }
        var count = priority == nil ? 0 : 1
        for entry in children {
            if count >= limit { return count }
            count += entry.node.leafCount(upTo: limit - count)
        }
        return count
    }
}

extension JSONValue {
    /// The number of values in this JSON (objects and arrays count their members), no further than `limit`.
    func nodeCount(upTo limit: Int) -> Int {
        switch self {
        case .object(let members):
            var count = 0
            for member in members {
                if count >= limit { return count }
                count += member.value.nodeCount(upTo: limit - count)
            }
            return count
        case .array(let items):
            var count = 0
            for item in items {
                if count >= limit { return count }
                count += item.nodeCount(upTo: limit - count)
            }
            return count
        case .null: return 0
        default: return 1
        }
    }
}
