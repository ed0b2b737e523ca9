// ScriptedNetwork -- a fake server side for SyncCore tests: records what the client sends, injects what it gets.

import CanopyCore
import Foundation
import Synchronization
import Testing

@testable import CanopyClient

/// One fake connection.
final class ScriptedConnection: ClientTransport, Sendable {
    private let sent = Mutex<[String]>([])
    private let closed = Atomic<Bool>(false)
    let events: @Sendable (TransportEvent) -> Void

    init(events: @escaping @Sendable (TransportEvent) -> Void) { self.events = events }

    func send(_ text: String) { sent.withLock { $0.append(text) } }
    /// Every frame sent, raw.
    var frames: [String] { sent.withLock { $0 } }
    func close() { closed.store(true, ordering: .relaxed) }
    var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// Data requests the client sent, parsed (keep-alives and pieces skipped).
    var requests: [JSONValue] {
        sent.withLock { $0 }.compactMap { try? JSONValue.parse($0) }.compactMap { $0["d"] }.filter { $0["a"] != nil }
    }
    var actions: [String] { requests.compactMap { $0["a"]?.stringValue } }

    func request(_ action: String, path: String? = nil) -> JSONValue? {
        requests.last { $0["a"]?.stringValue == action && (path == nil || $0["b"]?["p"]?.stringValue == path) }
    }

    func handshake() {
        events(.opened)
        events(.text(#"{"t":"c","d":{"t":"h","d":{"ts":1700000000000,"v":"5","h":"x","s":"sess"}}}"#))
    }

    func reply(_ r: Int64, _ status: String = "ok", _ data: JSONValue = "") {
        let message: JSONValue = ["t": "d", "d": ["r": .int(r), "b": ["s": .string(status), "d": data]]]
        events(.text(message.serialized()))
    }

    /// Replies to the last request with `action` (and path).
    func replyTo(_ action: String, path: String? = nil, _ status: String = "ok", _ data: JSONValue = "") {
        guard let r = request(action, path: path)?["r"]?.int64Value else {
            Issue.record("no \(action) request to answer")
            return
        }
        reply(r, status, data)
    }

    func push(_ action: String, _ body: JSONValue) {
        let message: JSONValue = ["t": "d", "d": ["a": .string(action), "b": body]]
        events(.text(message.serialized()))
    }

    func drop() { events(.closed(reason: "test drop")) }
}

/// The fake network: refuses or accepts connection attempts and keeps every connection made.
final class ScriptedNetwork: Sendable {
    private let state = Mutex<(accepting: Bool, connections: [ScriptedConnection])>((false, []))

    init(accepting: Bool = false) { state.withLock { $0.accepting = accepting } }

    var accepting: Bool {
        get { state.withLock { $0.accepting } }
        set { state.withLock { $0.accepting = newValue } }
    }

    var connections: [ScriptedConnection] { state.withLock { $0.connections } }
    var latest: ScriptedConnection? { connections.last }

    var factory: TransportFactory {
        { [self] _, events in
            let connection = ScriptedConnection(events: events)
            let accepted = state.withLock { state in
                if state.accepting { state.connections.append(connection) }
                return state.accepting
            }
            if !accepted { events(.closed(reason: "refused")) }
            return connection
        }
    }

    /// Waits for the `count`-th accepted connection and completes its handshake.
    func connect(_ count: Int) async -> ScriptedConnection? {
        guard await poll({ self.connections.count >= count }) else { return nil }
        let connection = connections[count - 1]
        connection.handshake()
        return connection
    }
}

/// Polls `condition` for up to 5 s.
func poll(_ condition: @Sendable () -> Bool) async -> Bool {
    for _ in 0..<500 {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return condition()
}

let scriptedOptions = DatabaseOptions(reconnect: ReconnectPolicy(initialDelay: 0.01, maxDelay: 0.05))

func scriptedDatabase(
    _ network: ScriptedNetwork, token: String? = nil, cache: URL? = nil, options: DatabaseOptions = scriptedOptions
) throws -> Database {
    try Database(
        endpoint: Endpoint(url: URL(string: "http://127.0.0.1:1")!, namespace: "test"), token: token,
        cacheDirectory: cache, options: options, loop: nil, transport: network.factory)
}

extension Database {
    /// Waits until everything queued on the client's queue so far has run, including the observer evaluation
    /// that work scheduled.
    func settle() {
        core.sync {}
        core.sync {}
    }

    /// Runs `body` while the client's queue is busy with it: what `body` hands the client is queued back-to-back,
    /// behind nothing the client queues meanwhile (frames of one socket read).
    func whileQueueHeld(_ body: () -> Void) {
        core.sync(body)
    }
}

func temporaryDirectory() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-client-" + UUID().uuidString)
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
