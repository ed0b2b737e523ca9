// LongPollTestClient -- a Firebase long-poll (`/.lp`) peer for tests: JSONP answers parsed, segments sent by hand.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization

/// Speaks the SDK's long-poll protocol over blocking HTTP connections: one poller thread keeps a poll open, and
/// each `send` is a request of its own, as the SDK's script tags are.
final class LongPollTestClient: @unchecked Sendable {  // safe: mutable state is in Mutexes; `nextSegment` and
    // `nextRequest` are used only by the test's own thread
    let port: Int
    let namespace: String
    let callbackID = "41"
    let id: String
    let password: String
    /// The local address its connections come from (nil: 127.0.0.1).
    let sourceAddress: String?
    private struct Inbox {
        var waiting: [Int: [JSONValue]] = [:]
        var nextNumber = 0
        var messages: [JSONValue] = []
        var closeCommands = 0
        var stopped = false
    }
    private let inbox = Mutex(Inbox())
    private let serial = Atomic<Int>(1000)
    private var nextSegment = 0
    private var nextRequest: Int64 = 1

    /// Sends `start`; the handshake is among `messages` afterwards. Call `startPolling()` to receive more.
    init(port: Int, namespace: String, sourceAddress: String? = nil) throws {
        self.port = port
        self.namespace = namespace
        self.sourceAddress = sourceAddress
        let response = try Self.start(port: port, namespace: namespace, sourceAddress: sourceAddress)
        guard response.status == 200 else { throw HTTPClientError("start answered \(response.status)") }
        let calls = Self.calls(in: response.text)
        guard let start = calls.first, start.name == "pLPCommand\(callbackID)",
            start.arguments.first == "start",
            let id = start.arguments[1].stringValue, let password = start.arguments[2].stringValue
        else { throw HTTPClientError("no start command in: \(response.text)") }
        self.id = id
        self.password = password
        absorb(calls.dropFirst())
    }

    /// Sends one `start` request from `sourceAddress` and returns the answer, without making a client of it.
    static func start(port: Int, namespace: String, sourceAddress: String? = nil) throws -> HTTPClientResponse {
        let http = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 30)
        http.sourceAddress = sourceAddress
        return try http.request("GET", "/.lp?start=t&ser=77&cb=41&v=5&ns=\(namespace)")
    }

    /// A fresh connection from this client's address.
    func http() -> HTTPClient {
        let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 30)
        client.sourceAddress = sourceAddress
        return client
    }

    /// The query that names this session (`id`, `pw`, `ns`) plus a fresh `ser`.
    func sessionQuery(password: String? = nil) -> String {
        "id=\(id)&pw=\(password ?? self.password)&ser=\(serial.add(1, ordering: .relaxed).newValue)&ns=\(namespace)"
    }

    /// Starts the poller thread: it keeps one poll open until the server sends `close` or refuses a poll.
    func startPolling() {
        let thread = Thread { [self] in
            let http = http()
            while !inbox.withLock({ $0.stopped }) {
                guard let response = try? http.request("GET", "/.lp?" + sessionQuery()),
                    response.status == 200
                else {
                    break
                }
                absorb(Self.calls(in: response.text)[...])
            }
            inbox.withLock { $0.stopped = true }
        }
        thread.start()
    }

    /// Sends a data request the way the SDK does: serialized, base64, cut into segments of `segmentSize`, at most
    /// `segmentsPerRequest` per HTTP request. Returns the request number.
    @discardableResult
    func request(
        _ action: String, _ body: JSONValue, segmentSize: Int = 1840, segmentsPerRequest: Int = 8
    ) throws
        -> Int64
    {
        let r = nextRequest
        nextRequest += 1
        let message = JSONValue(["t": "d", "d": ["r": .int(r), "a": .string(action), "b": body]])
        let segments = segment(message, size: segmentSize)
        var index = 0
        while index < segments.count {
            let end = min(index + segmentsPerRequest, segments.count)
            let status = try sendSegments(Array(segments[index..<end]))
            guard status == 200 else { throw HTTPClientError("segment request answered \(status)") }
            index = end
        }
        return r
    }

    /// Sends any message (a control message, say) in segments of `segmentSize`.
    func send(_ message: JSONValue, segmentSize: Int = 1840) throws {
        let status = try sendSegments(segment(message, size: segmentSize))
        guard status == 200 else { throw HTTPClientError("segment request answered \(status)") }
    }

    /// Numbers and encodes `message` as the SDK would (web-safe base64, `.` padding), without sending it.
    /// With `consume: false` the numbers stay free for the next message (a forged or discarded message).
    func segment(_ message: JSONValue, size: Int, consume: Bool = true) -> [(
        seg: Int, ts: Int, d: String
    )] {
        let base64 = Base64.encode(Array(message.serialized().utf8), url: true, padding: true)
            .replacingOccurrences(of: "=", with: ".")
        var pieces: [String] = []
        var rest = Substring(base64)
        while !rest.isEmpty {
            pieces.append(String(rest.prefix(size)))
            rest = rest.dropFirst(size)
        }
        defer { if consume { nextSegment += pieces.count } }
        return pieces.enumerated().map { (nextSegment + $0.offset, pieces.count, $0.element) }
    }

    /// Sends one request carrying `segments` (in the given order) and absorbs its answer; returns the status.
    func sendSegments(_ segments: [(seg: Int, ts: Int, d: String)], password: String? = nil) throws
        -> Int
    {
        var query = sessionQuery(password: password)
        for (i, segment) in segments.enumerated() {
            query += "&seg\(i)=\(segment.seg)&ts\(i)=\(segment.ts)&d\(i)=\(segment.d)"
        }
        let response = try http().request("GET", "/.lp?" + query)
        if response.status == 200 { absorb(Self.calls(in: response.text)[...]) }
        return response.status
    }

    /// Tells the server the client left (what the SDK's disconnect frame does); returns the status.
    func disconnect(password: String? = nil) throws -> Int {
        try http().request("GET", "/.lp?disconn=t&" + sessionQuery(password: password)).status
    }

    // MARK: - receiving

    /// Data responses are delivered in response-number order, as the SDK's PacketReceiver does.
    private func absorb(_ calls: ArraySlice<(name: String, arguments: [JSONValue])>) {
        inbox.withLock { inbox in
            for call in calls {
                if call.name == "pRTLPCB\(callbackID)", let number = call.arguments.first?.int64Value,
                    case .array(let messages)? = call.arguments.dropFirst().first
                {
                    inbox.waiting[Int(number)] = messages
                    while let ready = inbox.waiting.removeValue(forKey: inbox.nextNumber) {
                        inbox.messages += ready
                        inbox.nextNumber += 1
                    }
                } else if call.name == "pLPCommand\(callbackID)", call.arguments.first == "close" {
                    inbox.closeCommands += 1
                    inbox.stopped = true
                }
            }
        }
    }

    /// The calls a JSONP answer makes: `(function(w){var f=w["NAME"];if(f)f(ARGS);})(...);` per line.
    static func calls(in script: String) -> [(name: String, arguments: [JSONValue])] {
        script.split(separator: "\n").compactMap { line in
            guard let nameStart = line.range(of: "w[\""),
                let nameEnd = line.range(of: "\"]", range: nameStart.upperBound..<line.endIndex),
                let argsStart = line.range(of: "if(f)f("),
                let argsEnd = line.range(of: ");})(", options: .backwards),
                let arguments = try? JSONValue.parse(
                    "[" + line[argsStart.upperBound..<argsEnd.lowerBound] + "]"),
                case .array(let list) = arguments
            else { return nil }
            return (String(line[nameStart.upperBound..<nameEnd.lowerBound]), list)
        }
    }

    /// Waits for the first message (after those already consumed) matching `predicate`.
    func waitFor(timeout: TimeInterval = 5, _ predicate: (JSONValue) -> Bool) -> JSONValue? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let found = inbox.withLock({ inbox -> JSONValue? in
                guard let index = inbox.messages.firstIndex(where: predicate) else { return nil }
                return inbox.messages.remove(at: index)
            }) {
                return found
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return nil
    }

    /// The reply to request `r`.
    func reply(_ r: Int64) -> JSONValue? { waitFor { $0["d"]?["r"] == .int(r) } }

    /// The next push with action `action` (and path `path`, if given).
    func push(_ action: String, path: String? = nil, timeout: TimeInterval = 5) -> JSONValue? {
        waitFor(timeout: timeout) { m in
            m["d"]?["a"] == .string(action) && (path == nil || m["d"]?["b"]?["p"] == .string(path!))
        }
    }

    /// Every message delivered so far and not consumed, in order.
    var messages: [JSONValue] { inbox.withLock { $0.messages } }
    /// How many `close` commands arrived.
    var closeCommands: Int { inbox.withLock { $0.closeCommands } }
    /// Whether the poller stopped (closed by the server, or refused).
    var isStopped: Bool { inbox.withLock { $0.stopped } }
}
