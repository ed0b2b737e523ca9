// PublishBenchSubscribers -- attendee WebSocket subscribers for `canopy bench publish`, on their own event loop.
//
// Each socket authenticates with the admin credential (`gauth`) and listens on its attendee's user content,
// tier content and the public content. Every `d` (overwrite) and `m` (merge) push is applied to a local copy of
// the listened value, so a phase can tell when each listen reaches its expected final value, whether it was ever
// empty on the way, and which sockets received anything although none of their listens changed.
//
// During a phase the loop only reads: each message is stamped with its arrival time and kept, and the messages
// are parsed and applied once the sockets have been quiet for a moment (`settle`). Parsing 7.6 MB of pushes and
// comparing trees as they arrive took longer than the daemon took to send them, so "delivered" measured this
// client; now a listen's time is the arrival of the message that made it final, whatever parsing costs later.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization

/// What subscribers observed during one measured phase.
struct PublishBenchObservation {
    var affectedListens = 0
    var affectedSockets = 0
    /// Monotonic time (ns) at which the last affected listen reached its final value; nil if none did.
    var lastMatchNanoseconds: UInt64?
    var unmatchedListens = 0
    var bytes = 0
    var events = 0
    /// Listens / sockets that saw their location empty while its final value is not.
    var emptyListens = 0
    var emptySockets = 0
    /// Sockets none of whose listens changed that still received something (should be 0).
    var unaffectedReceiving = 0

    /// Bytes received per affected socket (0 when none was affected).
    var bytesPerAffectedSocket: Int { affectedSockets == 0 ? 0 : bytes / affectedSockets }
}

/// Monotonic nanoseconds.
func benchNow() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// The subscriber sockets. Public methods may be called from any thread; the state lives on `loop`.
final class PublishBenchSubscribers: @unchecked Sendable {  // safe: mutable state is touched only on `loop`
    private struct Listen {
        let path: Path
        let socket: Int
        var value = Node.empty
        var expected = Node.empty
        var affected = false
        var matches = true
        var matchedAt: UInt64?
        var sawEmpty = false
    }

    static let listensPerSocket = 3

    /// The daemon's process id (the benchmark reads its CPU time around each phase).
    let serverProcess: Int32

    private let loop: EventLoop
    private let port: Int
    private let namespace: String
    private let credential: String
    private var sockets: [WebSocketClient] = []
    private var pieces: [(remaining: Int, text: String)?] = []
    private var listens: [Listen] = []
    private var opened = 0
    private var failures: [String] = []
    private var okReplies = 0
    private var bytes = 0
    private var events = 0
    /// Bytes each socket received in this phase.
    private var socketBytes: [Int] = []
    private var lastMessage: UInt64 = 0
    /// Listens whose value differs from their expected value.
    private var mismatched = 0
    /// Messages received and not yet applied: socket, text, arrival time.
    private var inbox: [(socket: Int, text: String, at: UInt64)] = []

    /// Starts the loop thread. `paths[i]` are the locations socket `i` listens on.
    init(port: Int, namespace: String, credential: String, paths: [[Path]], serverProcess: Int32) throws {
        self.serverProcess = serverProcess
        loop = try EventLoop()
        self.port = port
        self.namespace = namespace
        self.credential = credential
        for (socket, locations) in paths.enumerated() {
            precondition(locations.count == Self.listensPerSocket, "one user, tier and public location per socket")
            for path in locations { listens.append(Listen(path: path, socket: socket)) }
        }
        pieces = Array(repeating: nil, count: paths.count)
        socketBytes = Array(repeating: 0, count: paths.count)
        let loop = self.loop
        Thread { loop.run() }.start()
    }

    /// Runs `body` on the loop and returns its result.
    private func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    /// Opens every socket (in batches), authenticates and listens; returns once every listen is acknowledged.
    func connect(timeoutSeconds: Double = 120) throws {
        let count = pieces.count
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        var started = 0
        while started < count {
            let batch = min(100, count - started)
            let first = started
            onLoop { self.open(first..<(first + batch)) }
            started += batch
            while onLoop({ self.opened + self.failures.count }) < started {
                guard Date() < deadline else { throw CommandFailure("timed out opening subscriber sockets") }
                usleep(2_000)
            }
            if let failure = onLoop({ self.failures.first }) { throw CommandFailure("subscriber: \(failure)") }
        }
        let wanted = count * (Self.listensPerSocket + 1)
        while onLoop({ self.drainInbox(); return self.okReplies }) < wanted {
            guard Date() < deadline else { throw CommandFailure("timed out waiting for listen acknowledgements") }
            usleep(5_000)
        }
    }

    private func open(_ range: Range<Int>) {
        for index in range {
            do {
                let client = try WebSocketClient(
                    loop: loop, host: "127.0.0.1", port: port, target: "/.ws?v=5&ns=\(namespace)"
                ) { [self] result in
                    switch result {
                    case .success: opened += 1
                    case .failure(let error): failures.append(error.userMessage)
                    }
                }
                client.onText = { [self] text in received(text, socket: index) }
                client.onClose = { [self] in failures.append("socket \(index) closed by the server") }
                sockets.append(client)
                send(index, r: 1, action: "gauth", body: ["cred": .string(credential)])
                for k in 0..<Self.listensPerSocket {
                    let path = listens[index * Self.listensPerSocket + k].path
                    send(index, r: Int64(2 + k), action: "q", body: ["p": .string(path.description), "h": ""])
                }
            } catch {
                failures.append(error.userMessage)
            }
        }
    }

    private func send(_ socket: Int, r: Int64, action: String, body: JSONValue) {
        let message: JSONValue = ["t": "d", "d": ["r": .int(r), "a": .string(action), "b": body]]
        sockets[socket].send(text: message.serialized())
    }

    // MARK: - receiving

    private func received(_ text: String, socket: Int) {
        let now = benchNow()
        bytes += text.utf8.count
        socketBytes[socket] += text.utf8.count
        lastMessage = now
        if var buffered = pieces[socket] {
            buffered.text += text
            buffered.remaining -= 1
            pieces[socket] = buffered.remaining > 0 ? buffered : nil
            if buffered.remaining == 0 { inbox.append((socket, buffered.text, now)) }
            return
        }
        if text.utf8.count <= 6, let count = Int(text), count > 0 {
            pieces[socket] = (count, "")
            return
        }
        inbox.append((socket, text, now))
    }

    /// Parses and applies every message received so far, in arrival order.
    private func drainInbox() {
        let messages = inbox
        inbox = []
        for message in messages { handle(message.text, socket: message.socket, arrivedAt: message.at) }
    }

    private func handle(_ text: String, socket: Int, arrivedAt now: UInt64) {
        guard let message = try? JSONValue.parse(text), message["t"]?.stringValue == "d",
            let data = message["d"]
        else { return }
        if data["r"] != nil {
            if data["b"]?["s"]?.stringValue == "ok" { okReplies += 1 } else { failures.append("refused: \(text.prefix(200))") }
            return
        }
        let action = data["a"]?.stringValue
        guard action == "d" || action == "m", let body = data["b"], let pathText = body["p"]?.stringValue,
            let path = try? Path(parsing: pathText)
        else { return }
        // An overwrite is one (path, value); a merge one per child it names.
        var changes: [(path: Path, value: Node)] = []
        if action == "m" {
            guard case .object(let members)? = body["d"] else { return }
            for member in members {
                guard let child = try? Path(parsing: member.key), let value = try? Node.from(json: member.value)
                else { return }
                changes.append((path.appending(child), value))
            }
        } else {
            guard let value = try? Node.from(json: body["d"] ?? .null) else { return }
            changes.append((path, value))
        }
        events += 1
        let base = socket * Self.listensPerSocket
        for index in base..<(base + Self.listensPerSocket) {
            var listen = listens[index]
            var touched = false
            for change in changes {
                guard let relative = change.path.relative(to: listen.path) else { continue }
                listen.value = listen.value.setting(change.value, at: relative)
                touched = true
            }
            guard touched else { continue }
            let matches = listen.value == listen.expected
            if matches {
                listen.matchedAt = now
            } else {
                listen.matchedAt = nil
                if listen.value.isEmpty { listen.sawEmpty = true }
            }
            if matches != listen.matches { mismatched += matches ? -1 : 1 }
            listen.matches = matches
            listens[index] = listen
        }
    }

    // MARK: - phases

    /// Starts a phase: each listen's final value is `expected(path)`. Returns the number of affected listens.
    @discardableResult
    func begin(expected: @escaping @Sendable (Path) -> Node) -> Int {
        onLoop {
            self.drainInbox()
            // Quiet is counted from the phase's start, not from the last message of the phase before.
            self.lastMessage = benchNow()
            self.bytes = 0
            self.events = 0
            for socket in self.socketBytes.indices { self.socketBytes[socket] = 0 }
            var affected = 0
            for index in self.listens.indices {
                var listen = self.listens[index]
                listen.expected = expected(listen.path)
                listen.affected = listen.value != listen.expected
                listen.matches = !listen.affected
                listen.matchedAt = nil
                listen.sawEmpty = false
                if listen.affected { affected += 1 }
                self.listens[index] = listen
            }
            self.mismatched = affected
            return affected
        }
    }

    /// Waits until every listen holds its expected value and no message arrived for `quietMilliseconds`.
    /// - Returns: false on timeout.
    func settle(timeoutSeconds: Double, quietMilliseconds: UInt64 = 300) -> Bool {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        let quiet = quietMilliseconds * 1_000_000
        while Date() < deadline {
            // Quiet: apply what arrived (parsing now cannot delay an arrival time any more). The check and the parse
            // are one task on the loop. As two tasks, the pushes that arrived between them were parsed while the loop
            // read nothing, and the rest of the publish was stamped that much later: 150–300 ms in about one round
            // in ten, when the check ran before the first push arrived.
            let settled = onLoop { () -> Bool in
                guard benchNow() - self.lastMessage > quiet else { return false }
                self.drainInbox()
                return self.mismatched == 0
            }
            if settled { return true }
            usleep(10_000)
        }
        return false
    }

    /// What the phase started by `begin` observed so far.
    func observation() -> PublishBenchObservation {
        onLoop {
            self.drainInbox()
            var out = PublishBenchObservation(bytes: self.bytes, events: self.events)
            var affectedSockets = Set<Int>()
            var emptySockets = Set<Int>()
            for listen in self.listens {
                if listen.sawEmpty && !listen.expected.isEmpty {
                    out.emptyListens += 1
                    emptySockets.insert(listen.socket)
                }
                guard listen.affected else { continue }
                out.affectedListens += 1
                affectedSockets.insert(listen.socket)
                if let at = listen.matchedAt {
                    out.lastMatchNanoseconds = max(out.lastMatchNanoseconds ?? 0, at)
                } else {
                    out.unmatchedListens += 1
                }
            }
            out.affectedSockets = affectedSockets.count
            out.emptySockets = emptySockets.count
            for (socket, received) in self.socketBytes.enumerated() where received > 0 && !affectedSockets.contains(socket) {
                out.unaffectedReceiving += 1
            }
            return out
        }
    }

    /// Closes every socket and stops the loop.
    func close() {
        onLoop { for socket in self.sockets { socket.close() } }
        usleep(100_000)
        loop.stop()
    }
}
