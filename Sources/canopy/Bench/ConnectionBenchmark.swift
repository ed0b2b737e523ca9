// ConnectionBenchmark -- `canopy bench connection`: what one heavy wire connection costs the daemon and the others.
//
// Starts a daemon as a child process (`--server` for another build, `--serve-option` for its flags) and a client
// B that reads a small path of another namespace every millisecond (latency counted from when each read was due,
// as in `bench isolation`). Then:
// 1. one WebSocket queues `--ondisconnect` onDisconnect sets (`o` at /d/<i>) and closes: the daemon's resident
//    memory before and after queuing, and B's reads from the close until the last accepted operation is applied;
// 2. one WebSocket listens at `--listens` locations (/l/<i>): resident memory before and after, then a write at
//    /l overlapping every listen, its latency and B's reads meanwhile.
// Each phase says how many requests the daemon accepted and refused (a per-connection limit answers
// `unavailable`).

import CanopyCore
import CanopyNet
import Foundation
import Synchronization

/// `canopy bench connection [--ondisconnect N] [--listens N] [--server <canopy binary>] [--serve-option <o>]...`.
struct ConnectionBenchmark {
    var onDisconnects = 200_000
    var listens = 500_000
    var binary: String?
    var serveOptions: [String] = []

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--ondisconnect": onDisconnects = try arguments.int(for: option, in: 0...10_000_000)
            case "--listens": listens = try arguments.int(for: option, in: 0...10_000_000)
            case "--server": binary = try arguments.value(for: option)
            case "--serve-option": serveOptions.append(try arguments.value(for: option))
            default: throw .unknownOption(option, command: "bench connection")
            }
        }
    }

    func run() throws {
        print("canopy bench connection: \(onDisconnects) onDisconnect operations, \(listens) listens on one socket")
        let server = try PublishBenchServer(namespace: "c", binary: binary, arguments: serveOptions)
        defer { server.stop() }
        let admin = [("Authorization", "Bearer \(server.adminCredential)")]
        let http = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 300)
        guard
            try http.request("PUT", "/room/title.json?ns=b", headers: admin, body: Array(#""hello""#.utf8)).status
                == 200
        else { throw CommandFailure("could not write namespace b") }
        let reader = BReader(port: server.port, credential: server.adminCredential)
        reader.start()
        defer { reader.stop() }
        Thread.sleep(forTimeInterval: 0.5)
        let baselineStart = benchNow()
        Thread.sleep(forTimeInterval: 1)
        print(
            IsolationBenchmark.row(
                "baseline (1 s)", reader.samples(dueFrom: baselineStart, to: benchNow()), phaseMilliseconds: 1000))

        if onDisconnects > 0 {
            let before = Self.rssMiB(server.processID)
            let socket = try BenchWireSocket(port: server.port, namespace: "c", credential: server.adminCredential)
            for index in 0..<onDisconnects {
                socket.request("o", #"{"p":"/d/\#(index)","d":\#(index)}"#)
            }
            let (ok, refused) = try socket.waitForReplies(onDisconnects + 1)
            let after = Self.rssMiB(server.processID)
            print(
                String(
                    format: "onDisconnect: %d accepted, %d refused; daemon RSS %.0f -> %.0f MiB (+%.0f MiB)", ok - 1,
                    refused, before, after, after - before))
            let last = ok - 2
            let closeStart = benchNow()
            socket.close()
            var applied = last < 0
            while !applied {
                let value = try http.request("GET", "/d/\(last).json?ns=c", headers: admin).text
                applied = value == String(last)
                if !applied { usleep(5_000) }
            }
            let closeEnd = benchNow()
            Thread.sleep(forTimeInterval: 0.5)
            print(
                IsolationBenchmark.row(
                    "while they run after the close", reader.samples(dueFrom: closeStart, to: closeEnd),
                    phaseMilliseconds: PublishBenchmark.milliseconds(closeEnd - closeStart)))
        }

        if listens > 0 {
            let before = Self.rssMiB(server.processID)
            let socket = try BenchWireSocket(port: server.port, namespace: "c", credential: server.adminCredential)
            for index in 0..<listens { socket.request("q", #"{"p":"/l/\#(index)","h":""}"#) }
            let (ok, refused) = try socket.waitForReplies(listens + 1)
            let after = Self.rssMiB(server.processID)
            print(
                String(
                    format: "listens: %d accepted, %d refused; daemon RSS %.0f -> %.0f MiB (+%.0f MiB)", ok - 1,
                    refused,
                    before, after, after - before))
            let writeStart = benchNow()
            let body = Array(#"{"\#(listens / 2)":1,"x":1}"#.utf8)
            guard try http.request("PATCH", "/l.json?ns=c", headers: admin, body: body).status == 200 else {
                throw CommandFailure("the write at /l failed")
            }
            let writeEnd = benchNow()
            Thread.sleep(forTimeInterval: 0.5)
            print(
                IsolationBenchmark.row(
                    "write at /l (fans out to all)", reader.samples(dueFrom: writeStart, to: writeEnd),
                    phaseMilliseconds: PublishBenchmark.milliseconds(writeEnd - writeStart)))
            socket.close()
        }
        http.close()
    }

    private static func rssMiB(_ pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kib = Double(line.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? 0
            return kib / 1024
        }
        return 0
    }
}

/// One admin WebSocket on its own loop thread that sends raw wire requests and counts the replies by status.
private final class BenchWireSocket: @unchecked Sendable {  // safe: `client` and `nextRequest` are touched only on
    // `loop` (requests are sent through `execute`); the counts are atomics
    private let loop: EventLoop
    private var client: WebSocketClient?
    private var nextRequest: Int64 = 1
    private let ok = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)
    private let failed = Atomic<Bool>(false)

    init(port: Int, namespace: String, credential: String) throws {
        let loop = try EventLoop()
        self.loop = loop
        Thread { loop.run() }.start()
        let opened = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            do {
                let client = try WebSocketClient(
                    loop: loop, host: "127.0.0.1", port: port, target: "/.ws?v=5&ns=\(namespace)"
                ) { [self] result in
                    if case .failure = result { failed.store(true, ordering: .relaxed) }
                    opened.signal()
                }
                client.onText = { [self] text in
                    // Replies only; pushes (`"a":`) and the handshake are not counted.
                    guard text.hasPrefix(#"{"t":"d","d":{"r":"#) else { return }
                    if text.contains(#""s":"ok""#) {
                        ok.add(1, ordering: .relaxed)
                    } else {
                        refused.add(1, ordering: .relaxed)
                    }
                }
                client.onClose = { [self] in failed.store(true, ordering: .relaxed) }
                self.client = client
            } catch {
                failed.store(true, ordering: .relaxed)
                opened.signal()
            }
        }
        guard opened.wait(timeout: .now() + 30) == .success, !failed.load(ordering: .relaxed) else {
            throw CommandFailure("the benchmark socket did not open")
        }
        request("gauth", #"{"cred":\#(JSONValue.string(credential).serialized())}"#)
    }

    /// Sends `{"t":"d","d":{"r":<next>,"a":action,"b":body}}`.
    func request(_ action: String, _ body: String) {
        loop.execute { [self] in
            let r = nextRequest
            nextRequest += 1
            client?.send(text: #"{"t":"d","d":{"r":\#(r),"a":"\#(action)","b":\#(body)}}"#)
        }
    }

    /// Waits until `count` replies arrived: (ok, refused).
    func waitForReplies(_ count: Int) throws -> (Int, Int) {
        let deadline = Date().addingTimeInterval(600)
        while ok.load(ordering: .relaxed) + refused.load(ordering: .relaxed) < count {
            guard Date() < deadline, !failed.load(ordering: .relaxed) else {
                throw CommandFailure("the socket closed or timed out before \(count) replies")
            }
            usleep(2_000)
        }
        return (ok.load(ordering: .relaxed), refused.load(ordering: .relaxed))
    }

    func close() {
        let done = DispatchSemaphore(value: 0)
        loop.execute { [self] in
            client?.onClose = nil
            client?.close()
            done.signal()
        }
        done.wait()
        Thread.sleep(forTimeInterval: 0.05)
        loop.stop()
    }
}
