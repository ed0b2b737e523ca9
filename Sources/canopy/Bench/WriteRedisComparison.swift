// WriteRedisComparison -- `canopy bench write`'s durable-write rows: Canopy (REST keep-alive PUT and wire-protocol
// `p`) against `redis-server --appendonly yes --appendfsync always` (SET), at 1, --clients and 50 connections.
//
// Both servers are child processes (so the client's CPU is this process's alone) and both promise the same thing:
// a reply means the write is on disk (Canopy with --sync full; Redis fsyncs its append-only file before replying).
// Every connection keeps one write in flight and sends the next when the reply comes, like a client awaiting each
// acknowledgement; values are the same bytes on both sides. Every side's connections share one event loop thread
// (REST keep-alive, wire protocol, RESP alike): blocking connections on a thread each wake up staggered on a
// loaded machine and split the writers into cohorts that each wait for their own fsync.

import CanopyCore
import CanopyNet
import Foundation

extension BenchCommand {
    /// One row: throughput and latency, and the CPU spent per write by the server and by the client.
    struct DurableWriteRow {
        var label: String
        var measurement: Measurement
        var serverMicrosecondsPerWrite: Double?
        /// The client's CPU time over wall time: 1.0 is one core kept busy.
        var clientCores: Double
        /// Writes acknowledged per fdatasync of the WAL (Canopy's group commit), from the daemon's metrics.
        var writesPerFsync: Double?
    }

    static let durablePayload = #"{"title":"hello","order":3,"seen":false}"#

    /// Prints the durable-write rows and the Canopy/Redis ratios (Redis rows skipped, with the reason, when
    /// `redis-server` is not installed or `--no-redis` was given).
    func compareDurableWritesWithRedis() throws {
        let counts = comparedClientCounts
        let syncMode = synchronousFull ? "full" : "normal"
        let (daemon, credential) = try FanoutChild.startDaemon(sync: syncMode, maxConnections: (counts.max() ?? 1) + 64)
        defer { daemon.stop() }
        var redis: FanoutChild?
        var skipped: String?
        if skipRedis {
            skipped = "--no-redis"
        } else {
            redis = try FanoutChild.startRedis(maxClients: (counts.max() ?? 1) + 64, durable: true)
            if redis == nil { skipped = "redis-server is not installed (apt-get install redis-server)" }
        }
        defer { redis?.stop() }
        print(
            "durable writes (a reply means on disk): canopy serve --sync \(syncMode) (child process) vs "
                + "redis-server --appendonly yes --appendfsync always; \(writes) writes of \(Self.durablePayload.utf8.count) B "
                + "per row, one in flight per connection")
        if let skipped { print("redis rows skipped: \(skipped)") }
        let auth = [("Authorization", "Bearer \(credential)")]
        let ns = "benchdurable"
        try preloadNamespace(port: daemon.port, auth: auth, ns: ns, nodes: 1_000, tls: nil)
        var rows: [Int: [String: DurableWriteRow]] = [:]
        func row(_ label: String, _ m: Measurement, fsyncs: Int? = nil) -> DurableWriteRow {
            DurableWriteRow(
                label: label, measurement: m,
                serverMicrosecondsPerWrite: m.serverCPUSeconds.map { $0 * 1e6 / Double(writes) },
                clientCores: m.seconds > 0 ? m.clientCPUSeconds / m.seconds : 0,
                writesPerFsync: fsyncs.flatMap { $0 > 0 ? Double(writes) / Double($0) : nil })
        }
        let metrics = HTTPClient(host: "127.0.0.1", port: daemon.port)
        func fsyncs() -> Int? { Self.fsyncCount(metrics, auth: auth) }
        func difference(_ before: Int?, _ after: Int?) -> Int? { before.flatMap { b in after.map { $0 - b } } }
        for count in counts {
            let conn = count == 1 ? "1 conn" : "\(count) conns"
            let beforeREST = fsyncs()
            let rest = try ClosedLoopWrites.run(
                connections: count, total: writes, server: daemon,
                target: RESTWriteTarget(port: daemon.port, namespace: ns, credential: credential, tag: "r\(count)"))
            let beforeWire = fsyncs()
            rows[count, default: [:]]["rest"] = row(
                "canopy rest put, \(conn)", rest, fsyncs: difference(beforeREST, beforeWire))
            let wire = try ClosedLoopWrites.run(
                connections: count, total: writes, server: daemon,
                target: WireWriteTarget(port: daemon.port, namespace: ns, credential: credential, tag: "w\(count)"))
            rows[count, default: [:]]["wire"] = row("canopy wire p, \(conn)", wire, fsyncs: difference(beforeWire, fsyncs()))
            if let redis {
                let set = try ClosedLoopWrites.run(
                    connections: count, total: writes, server: redis,
                    target: RedisWriteTarget(port: redis.port, tag: "k\(count)"))
                rows[count, default: [:]]["redis"] = row("redis set, \(conn)", set)
            }
        }
        print(
            "benchmark".padding(toLength: 34, withPad: " ", startingAt: 0)
                + "  writes/s    p50 ms    p99 ms  srv us/write  cli cores  writes/fsync")
        for count in counts {
            for side in ["rest", "wire", "redis"] {
                guard let r = rows[count]?[side] else { continue }
                let server = r.serverMicrosecondsPerWrite.map { String(format: "%12.1f", $0) } ?? "         n/a"
                print(
                    r.label.padding(toLength: 34, withPad: " ", startingAt: 0)
                        + String(format: "%10.0f %9.3f %9.3f  ", r.measurement.opsPerSecond, r.measurement.p50,
                            r.measurement.p99) + server + String(format: "  %9.2f", r.clientCores)
                        + (r.writesPerFsync.map { String(format: "  %12.1f", $0) } ?? "           n/a"))
            }
        }
        for count in counts {
            guard let redisRow = rows[count]?["redis"], redisRow.measurement.opsPerSecond > 0 else { continue }
            let base = redisRow.measurement.opsPerSecond
            let rest = (rows[count]?["rest"]?.measurement.opsPerSecond ?? 0) / base
            let wire = (rows[count]?["wire"]?.measurement.opsPerSecond ?? 0) / base
            print(String(format: "ratio canopy/redis, %d conn: rest put %.2f, wire p %.2f", count, rest, wire))
        }
        print("writes/fsync: writes acknowledged per fdatasync of the namespace's WAL (group commit; n/a for redis)")
        for count in counts {
            for side in ["rest", "wire", "redis"] {
                guard let r = rows[count]?[side], r.clientCores >= 0.9 else { continue }
                print(
                    "note: the benchmark client kept \(String(format: "%.2f", r.clientCores)) cores busy on "
                        + "'\(r.label)': it saturates a core, so the client shares the bound on this figure")
            }
        }
    }
}

extension BenchCommand {
    /// The daemon's WAL syncs so far (`canopy_fsync_duration_seconds_count` in its metrics); nil if unreadable.
    static func fsyncCount(_ client: HTTPClient, auth: [(String, String)]) -> Int? {
        guard let response = try? client.request("GET", "/.canopy/metrics", headers: auth), response.status == 200
        else { return nil }
        let text = String(decoding: response.body, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("canopy_fsync_duration_seconds_count") {
            return line.split(separator: " ").last.flatMap { Int($0) }
        }
        return nil
    }
}

/// A server the closed-loop writer drives: opens connections and sends write `index` on connection `c`.
protocol DurableWriteTarget: AnyObject {
    /// Opens connection `c`; it calls `run.ready(c)` once it may write, `run.acknowledged(c)` per successful reply
    /// and `run.fail(_:)` on anything else.
    func open(_ c: Int, loop: EventLoop, run: ClosedLoopWrites) throws
    func write(_ c: Int, index: Int)
    func closeAll()
}

/// `total` writes over `connections` connections on one event loop, each connection with one write in flight.
/// Loop-confined.
final class ClosedLoopWrites: @unchecked Sendable {  // safe: every member is touched only on `loop`'s thread
    private static let timeoutMs: Int64 = 180_000

    private let loop: EventLoop
    private let target: any DurableWriteTarget
    private let connections: Int
    private let total: Int
    private let server: FanoutChild
    private var ready = 0
    private var nextIndex = 0
    private var acknowledged = 0
    private var sentAt: [UInt64]
    private var latencies: [Double] = []
    private var finished = false
    private var failure: String?
    private var started: (wall: UInt64, client: Double, server: Double?)?
    private var ended: (wall: UInt64, client: Double, server: Double?)?

    private init(loop: EventLoop, target: any DurableWriteTarget, connections: Int, total: Int, server: FanoutChild) {
        self.loop = loop
        self.target = target
        self.connections = connections
        self.total = total
        self.server = server
        sentAt = Array(repeating: 0, count: connections)
        latencies.reserveCapacity(total)
    }

    /// Connects every connection, then runs the writes; the clock runs from the first write to the last reply.
    static func run(
        connections: Int, total: Int, server: FanoutChild, target: any DurableWriteTarget
    ) throws -> BenchCommand.Measurement {
        let loop = try EventLoop()
        let run = ClosedLoopWrites(loop: loop, target: target, connections: connections, total: total, server: server)
        loop.execute { run.start() }
        loop.run()
        if let failure = run.failure { throw CommandFailure("benchmark failed: \(failure)") }
        guard let started = run.started, let ended = run.ended else { throw CommandFailure("benchmark did not run") }
        let elapsed = Double(ended.wall - started.wall) / 1e9
        let sorted = run.latencies.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        var serverSeconds: Double?
        if let before = started.server, let after = ended.server { serverSeconds = after - before }
        return BenchCommand.Measurement(
            opsPerSecond: Double(sorted.count) / elapsed, p50: percentile(0.5), p99: percentile(0.99), seconds: elapsed,
            clientCPUSeconds: ended.client - started.client, serverCPUSeconds: serverSeconds)
    }

    private func start() {
        _ = loop.schedule(afterMilliseconds: Self.timeoutMs) { [self] in
            fail("timed out after \(acknowledged) of \(total) writes")
        }
        for c in 0..<connections {
            do {
                try target.open(c, loop: loop, run: self)
            } catch {
                return fail("connection \(c) could not connect: \(error)")
            }
        }
    }

    func ready(_ c: Int) {
        ready += 1
        guard ready == connections, !finished else { return }
        started = (monotonicNanoseconds(), FanoutChild.ownCPUSeconds(), server.cpuSeconds)
        for c in 0..<connections { sendNext(on: c) }
    }

    func acknowledged(_ c: Int) {
        guard !finished else { return }
        latencies.append(Double(monotonicNanoseconds() - sentAt[c]) / 1e6)
        acknowledged += 1
        if acknowledged == total {
            ended = (monotonicNanoseconds(), FanoutChild.ownCPUSeconds(), server.cpuSeconds)
            return finish()
        }
        sendNext(on: c)
    }

    func fail(_ reason: String) {
        guard !finished else { return }
        failure = reason
        finish()
    }

    private func sendNext(on c: Int) {
        guard nextIndex < total else { return }
        let index = nextIndex
        nextIndex += 1
        sentAt[c] = monotonicNanoseconds()
        target.write(c, index: index)
    }

    private func finish() {
        finished = true
        target.closeAll()
        // Closing WebSockets wait for the server's echo of the close frame; give them a moment.
        _ = loop.schedule(afterMilliseconds: 200) { [loop] in loop.stop() }
    }
}

/// Canopy over the Firebase wire protocol: `gauth` with the admin credential, then `p` of the payload to
/// `/items/<tag>-<index>`, acknowledged by `ok` once committed.
final class WireWriteTarget: DurableWriteTarget {
    private let port: Int
    private let namespace: String
    private let credential: String
    private let tag: String
    private var clients: [WebSocketClient] = []

    init(port: Int, namespace: String, credential: String, tag: String) {
        self.port = port
        self.namespace = namespace
        self.credential = credential
        self.tag = tag
    }

    func open(_ c: Int, loop: EventLoop, run: ClosedLoopWrites) throws {
        let client = try WebSocketClient(
            loop: loop, host: "127.0.0.1", port: port, target: "/.ws?v=5&ns=\(percentEncode(namespace))"
        ) { result in
            if case .failure(let error) = result { run.fail("connection \(c): \(error.userMessage)") }
        }
        client.onClose = { run.fail("connection \(c): the server closed the connection") }
        client.onText = { text in
            guard let (r, status) = FanoutCanopyTransport.reply(text) else { return }
            guard status == "ok" else { return run.fail("connection \(c): request \(r) failed: \(status)") }
            if r == 1 { run.ready(c) } else { run.acknowledged(c) }
        }
        let auth: JSONValue = ["cred": .string(credential)]
        client.send(text: #"{"t":"d","d":{"r":1,"a":"gauth","b":\#(auth.serialized())}}"#)
        clients.append(client)
    }

    func write(_ c: Int, index: Int) {
        clients[c].send(
            text: #"{"t":"d","d":{"r":\#(index + 2),"a":"p","b":{"p":"/items/\#(tag)-\#(index)","d":\#(BenchCommand.durablePayload)}}}"#)
    }

    func closeAll() {
        for client in clients {
            client.onClose = nil
            client.onText = nil
            client.close()
        }
        clients = []
    }
}

/// Redis over RESP: `SET <tag>-<index> <payload>`, acknowledged by `+OK` (after the append-only file's fsync).
final class RedisWriteTarget: DurableWriteTarget {
    private let port: Int
    private let tag: String
    private var connections: [FanoutRESPConnection] = []

    init(port: Int, tag: String) {
        self.port = port
        self.tag = tag
    }

    func open(_ c: Int, loop: EventLoop, run: ClosedLoopWrites) throws {
        let connection = try FanoutRESPConnection(loop: loop, host: "127.0.0.1", port: port)
        connection.onOpen = { run.ready(c) }
        connection.onFailure = { reason in run.fail("redis connection \(c): \(reason)") }
        connection.onReply = { elements in
            guard let reply = elements.first, reply.elementsEqual("OK".utf8) else {
                let text = elements.first.map { String(decoding: $0, as: UTF8.self) } ?? "an empty reply"
                return run.fail("redis connection \(c): SET answered \(text)")
            }
            run.acknowledged(c)
        }
        connections.append(connection)
    }

    func write(_ c: Int, index: Int) {
        connections[c].send(["SET", "\(tag)-\(index)", BenchCommand.durablePayload])
    }

    func closeAll() {
        for connection in connections { connection.close() }
        connections = []
    }
}

/// Canopy over REST: keep-alive `PUT /items/<tag>-<index>.json?print=silent` of the payload on a non-blocking socket
/// of the event loop, acknowledged by a 2xx response once committed. (One loop thread for every connection, like the
/// wire and Redis sides: thread-per-connection clients wake up staggered and split the writers into cohorts.)
final class RESTWriteTarget: DurableWriteTarget {
    private let port: Int
    private let namespace: String
    private let authorization: String
    private let tag: String
    private var connections: [LoopHTTPConnection] = []

    init(port: Int, namespace: String, credential: String, tag: String) {
        self.port = port
        self.namespace = namespace
        authorization = "Bearer \(credential)"
        self.tag = tag
    }

    func open(_ c: Int, loop: EventLoop, run: ClosedLoopWrites) throws {
        let connection = try LoopHTTPConnection(loop: loop, port: port)
        connection.onOpen = { run.ready(c) }
        connection.onFailure = { reason in run.fail("rest connection \(c): \(reason)") }
        connection.onResponse = { status in
            guard (200..<300).contains(status) else { return run.fail("rest connection \(c): PUT answered \(status)") }
            run.acknowledged(c)
        }
        connections.append(connection)
    }

    func write(_ c: Int, index: Int) {
        let body = BenchCommand.durablePayload
        connections[c].send(
            "PUT /items/\(tag)-\(index).json?ns=\(namespace)&print=silent HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
                + "Authorization: \(authorization)\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
    }

    func closeAll() {
        for connection in connections { connection.close() }
        connections = []
    }
}

/// One keep-alive HTTP/1.1 client connection on an event loop, one request at a time; hands over each response's
/// status once its body (by Content-Length, none for 204/304) has arrived. Loop-confined.
final class LoopHTTPConnection {
    private let socket: LoopClientSocket
    private var input: [UInt8] = []

    var onOpen: (() -> Void)? {
        get { socket.onOpen }
        set { socket.onOpen = newValue }
    }
    var onResponse: ((Int) -> Void)?
    var onFailure: ((String) -> Void)? {
        get { socket.onFailure }
        set { socket.onFailure = newValue }
    }

    private var closed: Bool { socket.closed }

    init(loop: EventLoop, port: Int) throws(NetError) {
        socket = try LoopClientSocket(loop: loop, host: "127.0.0.1", port: port)
        socket.onInput = { [unowned self] bytes in
            input.append(contentsOf: bytes)
            parseResponses()
        }
    }

    func send(_ request: String) {
        socket.queue(request.utf8)
        socket.flush()
    }

    func close() {
        onResponse = nil
        socket.close()
    }

    private static let headEnd: [UInt8] = [13, 10, 13, 10]

    private func parseResponses() {
        while !closed, let end = input.firstRange(of: Self.headEnd)?.upperBound {
            let head = String(decoding: input[..<end], as: UTF8.self)
            let lines = head.split(separator: "\r\n")
            guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1.1 "),
                let status = Int(statusLine.dropFirst(9).prefix(3))
            else { return fail("not an HTTP/1.1 response") }
            var length = 0
            for line in lines.dropFirst() where line.lowercased().hasPrefix("content-length:") {
                length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
            }
            if status == 204 || status == 304 { length = 0 }
            guard input.count >= end + length else { return }
            input.removeFirst(end + length)
            onResponse?(status)
        }
    }

    private func fail(_ reason: String) { socket.fail(reason) }
}
