// SoakClients -- the WebSocket clients of `canopy bench soak`, on one event loop: steady listeners that measure
// delivery latency, churning sockets (connect, auth, listen, unlisten, token refresh, disconnect) and the writer.

import CanopyAuth
import CanopyCore
import CanopyNet
import Foundation
import Synchronization

/// What one client loop counted since the last `take()`.
struct SoakCounters: Sendable {
    /// Delivery latencies of steady listeners, in microseconds (write sent → push received).
    var latenciesMicroseconds: [UInt32] = []
    var writesSent = 0
    var writesAcknowledged = 0
    var churnCycles = 0
    var tokenRefreshes = 0
    var failures = 0
    var firstFailures: [String] = []
    /// Now, not since the last take.
    var steadyReady = 0
    var churnOpen = 0
    var steadyLost = 0

    mutating func add(_ other: SoakCounters) {
        latenciesMicroseconds += other.latenciesMicroseconds
        writesSent += other.writesSent
        writesAcknowledged += other.writesAcknowledged
        churnCycles += other.churnCycles
        tokenRefreshes += other.tokenRefreshes
        failures += other.failures
        if firstFailures.count < 5 {
            firstFailures += other.firstFailures.prefix(5 - firstFailures.count)
        }
        steadyReady += other.steadyReady
        churnOpen += other.churnOpen
        steadyLost += other.steadyLost
    }
}

/// One event-loop thread of soak clients. Public methods may be called from any thread; state lives on `loop`.
final class SoakClientLoop: @unchecked Sendable {  // safe: every mutable field is touched only on `loop`
    /// The value every soak write stores starts with this marker, then `<seq>:<monotonic ns sent>`.
    static let marker = Array("soak:".utf8)

    private final class Steady {
        let client: WebSocketClient
        let room: Int
        var ready = false
        var nextRequest: Int64 = 3
        init(client: WebSocketClient, room: Int) {
            self.client = client
            self.room = room
        }
    }

    let loop: EventLoop
    private let port: Int
    private let namespace: String
    private let rooms: Int
    private let signingSecret: [UInt8]
    private var steady: [Steady] = []
    private var counters = SoakCounters()
    private var churnOpen = 0
    private var nextChurn = 0
    private var nextRefresh = 0
    private var writer: WebSocketClient?
    private var writeSeq = 0
    private var writeRequest: Int64 = 2
    private var ticker: TimerHandle?
    private var running = false

    /// Starts the loop thread.
    init(port: Int, namespace: String, rooms: Int, signingSecret: [UInt8]) throws {
        loop = try EventLoop()
        self.port = port
        self.namespace = namespace
        self.rooms = rooms
        self.signingSecret = signingSecret
        let loop = self.loop
        Thread { loop.run() }.start()
    }

    /// Runs `body` on the loop and returns its result.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
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

    private var target: String { "/.ws?v=5&ns=\(namespace)" }

    private func token(for uid: String) -> String {
        let now = SystemClock().nowMilliseconds() / 1000
        return
            (try? TokenMinter.mintHS256(
                claims: ["uid": .string(uid)], secret: signingSecret, issuedAt: now, ttlSeconds: 3600))
            ?? ""
    }

    private static func message(_ r: Int64, _ action: String, _ body: JSONValue) -> String {
        JSONValue.object([
            JSONMember("t", "d"),
            JSONMember("d", ["r": .int(r), "a": .string(action), "b": body]),
        ]).serialized()
    }

    private func fail(_ text: String) {
        counters.failures += 1
        if counters.firstFailures.count < 5 { counters.firstFailures.append(String(text.prefix(200))) }
    }

    // MARK: - steady listeners

    /// Opens steady listeners `indices` (each authenticates with its own token and listens on its room).
    func openSteady(_ indices: Range<Int>) {
        loop.execute { [self] in
            for index in indices {
                let room = index % rooms
                do {
                    let client = try WebSocketClient(
                        loop: loop, host: "127.0.0.1", port: port, target: target
                    ) {
                        [self] result in
                        if case .failure(let error) = result { fail("steady \(index): \(error.userMessage)") }
                    }
                    let listener = Steady(client: client, room: room)
                    client.onText = { [self, weak listener] text in
                        guard let listener else { return }
                        steadyReceived(text, listener)
                    }
                    client.onClose = { [self] in
                        counters.steadyLost += 1
                        fail("steady \(index): closed by the server")
                    }
                    steady.append(listener)
                    client.send(
                        text: Self.message(1, "auth", ["cred": .string(token(for: "steady-\(index)"))]))
                    client.send(text: Self.message(2, "q", ["p": .string("/rooms/r\(room)"), "h": ""]))
                } catch {
                    fail("steady \(index): \(error)")
                }
            }
        }
    }

    private func steadyReceived(_ text: String, _ listener: Steady) {
        var text = text
        let now = benchNow()
        if let sent = text.withUTF8({ Self.sentAt(in: $0) }) {
            if listener.ready {
                counters.latenciesMicroseconds.append(UInt32(clamping: (now &- sent) / 1000))
            }
            return
        }
        guard let (r, ok) = Self.reply(text) else { return }
        if !ok { return fail("steady reply \(r): \(text)") }
        if r == 2 {
            listener.ready = true
            counters.steadyReady += 1
        } else if r >= 3 {
            counters.tokenRefreshes += 1
        }
    }

    // MARK: - load

    /// Opens the writer's socket (admin credential); `writerReady` once its `gauth` is acknowledged.
    func openWriter(adminCredential: String) {
        loop.execute { [self] in
            do {
                let client = try WebSocketClient(loop: loop, host: "127.0.0.1", port: port, target: target) {
                    [self] result in
                    if case .failure(let error) = result { fail("writer: \(error.userMessage)") }
                }
                client.onText = { [self] text in
                    guard let (r, ok) = Self.reply(text) else { return }
                    if r == 1 {
                        if ok { writerIsReady = true } else { fail("writer gauth: \(text)") }
                    } else if ok {
                        counters.writesAcknowledged += 1
                    } else {
                        fail("write \(r): \(text)")
                    }
                }
                client.onClose = { [self] in fail("writer: closed by the server") }
                client.send(text: Self.message(1, "gauth", ["cred": .string(adminCredential)]))
                writer = client
            } catch {
                fail("writer: \(error)")
            }
        }
    }

    private var writerIsReady = false

    /// Whether the writer's `gauth` was acknowledged.
    var writerReady: Bool { onLoop { [self] in writerIsReady } }

    /// Every 10 ms sends the writes (over the writer, if open), churn cycles and token refreshes that are due at
    /// the given rates (per second, for this loop).
    func startLoad(
        writeRate: Double, churnRate: Double, churnHoldMilliseconds: Int, refreshRate: Double,
        maxChurnOpen: Int
    ) {
        loop.execute { [self] in
            running = true
            let start = benchNow()
            var writes = 0
            var churns = 0
            var refreshes = 0
            func tick() {
                guard running else { return }
                let elapsed = Double(benchNow() - start) / 1e9
                while Double(writes) < elapsed * writeRate {
                    writes += 1
                    write()
                }
                while Double(churns) < elapsed * churnRate {
                    churns += 1
                    if churnOpen < maxChurnOpen { churn(hold: churnHoldMilliseconds) }
                }
                while Double(refreshes) < elapsed * refreshRate {
                    refreshes += 1
                    refreshSteady()
                }
                ticker = loop.schedule(afterMilliseconds: 10) { tick() }
            }
            tick()
        }
    }

    /// Stops starting writes, churn cycles and refreshes (cycles under way finish).
    func stopLoad() {
        onLoop { [self] in
            running = false
            ticker?.cancel()
            ticker = nil
        }
    }

    private func write() {
        guard let writer else { return }
        writeSeq += 1
        writeRequest += 1
        let room = writeSeq % rooms
        let value = "soak:\(writeSeq):\(benchNow())"
        writer.send(
            text: Self.message(
                writeRequest, "p", ["p": .string("/rooms/r\(room)/last"), "d": .string(value)]))
        counters.writesSent += 1
    }

    private func refreshSteady() {
        guard !steady.isEmpty else { return }
        let listener = steady[nextRefresh % steady.count]
        nextRefresh += 1
        guard listener.ready else { return }
        let r = listener.nextRequest
        listener.nextRequest += 1
        listener.client.send(
            text: Self.message(r, "auth", ["cred": .string(token(for: "steady-refresh-\(nextRefresh)"))]))
    }

    /// One churn cycle: connect, auth, listen; after `hold` ms unlisten, refresh the token, disconnect.
    private func churn(hold: Int) {
        nextChurn += 1
        let index = nextChurn
        let room = index % rooms
        churnOpen += 1
        var finished = false
        func finish(_ client: WebSocketClient?, failure: String?) {
            guard !finished else { return }
            finished = true
            churnOpen -= 1
            if let failure { fail("churn \(index): \(failure)") } else { counters.churnCycles += 1 }
            client?.onText = nil
            client?.onClose = nil
            client?.close()
        }
        do {
            let client = try WebSocketClient(loop: loop, host: "127.0.0.1", port: port, target: target) {
                result in
                if case .failure(let error) = result { finish(nil, failure: error.userMessage) }
            }
            client.onClose = { finish(nil, failure: "closed by the server") }
            client.onText = { [self, weak client] text in
                guard let client, let (r, ok) = Self.reply(text) else { return }
                guard ok else { return finish(client, failure: "request \(r): \(text)") }
                switch r {
                case 2:
                    _ = loop.schedule(afterMilliseconds: Int64(hold)) { [weak client] in
                        client?.send(text: Self.message(3, "n", ["p": .string("/rooms/r\(room)")]))
                    }
                case 3:
                    client.send(
                        text: Self.message(4, "auth", ["cred": .string(self.token(for: "churn-\(index)-b"))]))
                case 4:
                    counters.tokenRefreshes += 1
                    finish(client, failure: nil)
                default: break
                }
            }
            client.send(text: Self.message(1, "auth", ["cred": .string(token(for: "churn-\(index)"))]))
            client.send(text: Self.message(2, "q", ["p": .string("/rooms/r\(room)"), "h": ""]))
        } catch {
            finish(nil, failure: "\(error)")
        }
    }

    /// The counters since the last call (latencies, rates) and the current gauges.
    func take() -> SoakCounters {
        onLoop { [self] in
            var taken = counters
            taken.churnOpen = churnOpen
            taken.steadyReady = steady.count(where: \.ready)
            counters = SoakCounters()
            counters.steadyLost = taken.steadyLost
            return taken
        }
    }

    /// The current gauges (nothing is reset).
    func peekGauges() -> SoakCounters {
        onLoop { [self] in
            var gauges = SoakCounters()
            gauges.churnOpen = churnOpen
            gauges.steadyReady = steady.count(where: \.ready)
            return gauges
        }
    }

    /// Closes every socket and stops the loop.
    func close() {
        onLoop { [self] in
            for listener in steady {
                listener.client.onClose = nil
                listener.client.close()
            }
            writer?.onClose = nil
            writer?.close()
        }
        usleep(200_000)
        loop.stop()
    }

    // MARK: - scanning

    /// The send time in a push of a soak value (`"soak:<seq>:<ns>"`), without building a JSON tree.
    private static func sentAt(in bytes: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard let range = bytes.firstRange(of: marker) else { return nil }
        var index = range.upperBound
        while index < bytes.count, bytes[index] != UInt8(ascii: ":") { index += 1 }
        index += 1
        var value: UInt64 = 0
        var digits = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            value = value &* 10 &+ UInt64(bytes[index] - UInt8(ascii: "0"))
            index += 1
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    /// The request number of a reply envelope and whether its status is ok; nil for pushes and control messages.
    private static func reply(_ text: String) -> (Int64, Bool)? {
        guard text.hasPrefix(#"{"t":"d","d":{"r":"#), let json = try? JSONValue.parse(text),
            case .int(let r)? = json["d"]?["r"]
        else { return nil }
        return (r, json["d"]?["b"]?["s"]?.stringValue == "ok")
    }
}
