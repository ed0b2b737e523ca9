// RemoteOptions -- how CLI tools reach a running daemon: --url/--token/--ns (or CANOPY_URL/CANOPY_TOKEN).

import CanopyCore
import CanopyNet

/// Connection options shared by the admin commands.
struct RemoteOptions {
    var url: String?
    var token: String?
    var namespace: String?
    var dataDirectory = "./canopy-data"

    static let usage = """
          --url     daemon URL (default $CANOPY_URL, else http://127.0.0.1:9000)
          --token   admin credential or admin token (default $CANOPY_TOKEN, else <data>/admin.credential)
          --data    data directory whose admin.credential to use when no token is given (default ./canopy-data)
          --ns      the event (namespace)
        """

    /// Consumes one option if it is a remote option; returns false otherwise.
    mutating func parse(_ option: String, _ arguments: inout Arguments) throws(UsageError) -> Bool {
        switch option {
        case "--url": url = try arguments.value(for: option)
        case "--token": token = try arguments.value(for: option)
        case "--ns": namespace = try arguments.value(for: option)
        case "--data": dataDirectory = try arguments.value(for: option)
        default: return false
        }
        return true
    }

    func requireNamespace() throws(UsageError) -> String {
        guard let namespace else { throw .missingOption("--ns") }
        return namespace
    }

    var resolvedURL: String { url ?? environment("CANOPY_URL") ?? "http://127.0.0.1:9000" }

    func resolvedToken() throws -> String {
        if let token { return token }
        if let token = environment("CANOPY_TOKEN") { return token }
        let file = dataDirectory + "/admin.credential"
        if let text = try? readFile(file) {
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        throw CommandFailure("no credential: pass --token, set CANOPY_TOKEN, or run next to the daemon's --data directory")
    }

    /// Sends a request to the daemon; throws a clear failure for connection errors and error statuses.
    func send(_ method: String, _ path: String, query: [(String, String)] = [], body: [UInt8] = [],
              headers: [(String, String)] = [], accept: Set<Int> = [200]) throws -> HTTPClientResponse
    {
        let client = try HTTPClient(url: resolvedURL, timeoutSeconds: 120)
        var target = path
        var items = query
        if let namespace { items.insert(("ns", namespace), at: 0) }
        if !items.isEmpty {
            target += "?" + items.map { "\($0.0)=\(percentEncode($0.1))" }.joined(separator: "&")
        }
        let response: HTTPClientResponse
        do {
            response = try client.request(
                method, target, headers: [("Authorization", "Bearer \(try resolvedToken())")] + headers, body: body)
        } catch let error as HTTPClientError {
            throw CommandFailure(error.userMessage)
        }
        guard accept.contains(response.status) else {
            let message = (try? JSONValue.parse(response.body))?["error"]?.stringValue ?? response.text
            switch response.status {
            case 401: throw CommandFailure("the daemon refused the credential: \(message)")
            default: throw CommandFailure("\(method) \(path) failed (\(response.status)): \(message)")
            }
        }
        return response
    }
}

/// Percent-encodes a query value (RFC 3986 unreserved characters stay as they are).
func percentEncode(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
            UInt8(ascii: "~"):
            out.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
        }
    }
    return out
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

import Foundation
