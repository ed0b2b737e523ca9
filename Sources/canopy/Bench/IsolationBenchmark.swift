// IsolationBenchmark -- `canopy bench isolation`: small reads of one namespace while another opens or publishes.
//
// Starts a daemon as a child process, fills namespace A with a large tree (about `--megabytes` of JSON) and
// namespace B with a small one, and restarts the daemon so that A must be loaded again. One client then reads a
// small path of B in a loop while (1) nothing else happens (baseline), (2) a request for A makes the daemon load
// A's tree, and (3) a publish of a generated event (`--items`, `--attendees`, as `bench publish`) is computed and
// committed on A. Each phase prints B's read latencies (p50, p99, max) and the phase's own duration. `--server`
// runs another `canopy` binary, to compare builds on the same machine.

import CanopyCore
import CanopyNet
import CanopyPublish
import Foundation
import Synchronization

/// `canopy bench isolation [--megabytes N] [--items N] [--attendees N] [--server <canopy binary>]`.
struct IsolationBenchmark {
    var megabytes = 50
    var shape = PublishBenchShape()
    var binary: String?

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--megabytes": megabytes = try arguments.int(for: option, in: 1...2_000)
            case "--items": shape.items = try arguments.int(for: option, in: 1...100_000)
            case "--attendees": shape.attendees = try arguments.int(for: option, in: 1...1_000_000)
            case "--server": binary = try arguments.value(for: option)
            default: throw .unknownOption(option, command: "bench isolation")
            }
        }
    }

    func run() throws {
        let data = NSTemporaryDirectory() + "canopy-bench-isolation-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: data) }
        print("canopy bench isolation: A holds ~\(megabytes) MB of JSON; publish \(shape.items) items x \(shape.attendees) attendees")
        var server = try PublishBenchServer(namespace: "a", binary: binary, dataDirectory: data)
        let fillStart = benchNow()
        try Self.fill(server, megabytes: megabytes)
        try server.request("PUT", "/room/title.json?print=silent&ns=b", body: "hello")
        let event = PublishBenchEvent(shape: shape, seed: 2026)
        try server.put(PublishLayout.pendingContent, event.pendingContent(revision: 0))
        print("filled A in \(Int(PublishBenchmark.milliseconds(benchNow() - fillStart))) ms; restarting the daemon")
        server.stop()
        server = try PublishBenchServer(namespace: "a", binary: binary, dataDirectory: data)
        defer { server.stop() }
        // B is opened before the phases (its own first load is not what is measured).
        try server.request("GET", "/room/title.json?ns=b")

        let reader = BReader(port: server.port, credential: server.adminCredential)
        reader.start()
        defer { reader.stop() }
        Thread.sleep(forTimeInterval: 1)
        print(Self.row("baseline (1 s)", reader.take(), phaseMilliseconds: 1000))

        let loadStart = benchNow()
        try server.request("GET", "/bulk/c0/k0.json")
        let loaded = PublishBenchmark.milliseconds(benchNow() - loadStart)
        print(Self.row("while A (\(megabytes) MB) opens", reader.take(), phaseMilliseconds: loaded))

        Thread.sleep(forTimeInterval: 0.5)
        _ = reader.take()
        let publishStart = benchNow()
        try server.request("POST", "/.canopy/publish")
        let published = PublishBenchmark.milliseconds(benchNow() - publishStart)
        print(Self.row("while A publishes", reader.take(), phaseMilliseconds: published))
    }

    /// Writes about `megabytes` of small leaves into A, a megabyte per PATCH.
    private static func fill(_ server: PublishBenchServer, megabytes: Int) throws {
        let leavesPerMegabyte = 10_000  // {"kNNNNN": "<~90 bytes>"}: about 100 bytes of JSON per leaf
        let text = String(repeating: "x", count: 88)
        for chunk in 0..<megabytes {
            var members: [JSONMember] = []
            members.reserveCapacity(leavesPerMegabyte)
            for leaf in 0..<leavesPerMegabyte { members.append(JSONMember("k" + String(leaf), .string(text))) }
            try server.request("PUT", "/bulk/c\(chunk).json?print=silent", body: .object(members))
        }
    }

    private static func row(_ name: String, _ samples: [Double], phaseMilliseconds: Double) -> String {
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        return String(
            format: "%-34@ phase %8.1f ms   B reads: %6d   p50 %7.2f ms   p99 %8.2f ms   max %8.2f ms",
            name as NSString, phaseMilliseconds, sorted.count, percentile(0.5), percentile(0.99), sorted.last ?? 0)
    }
}

/// One client reading a small path of namespace B back to back, on its own thread.
private final class BReader: Sendable {
    private let port: Int
    private let credential: String
    private let samples = Mutex<[Double]>([])
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)

    init(port: Int, credential: String) {
        self.port = port
        self.credential = credential
    }

    func start() {
        Thread { [self] in
            let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 300)
            let headers = [("Authorization", "Bearer \(credential)")]
            while running.load(ordering: .relaxed) {
                let start = benchNow()
                guard (try? client.request("GET", "/room/title.json?ns=b", headers: headers))?.status == 200 else {
                    break
                }
                let elapsed = PublishBenchmark.milliseconds(benchNow() - start)
                samples.withLock { $0.append(elapsed) }
            }
            client.close()
            finished.signal()
        }.start()
    }

    /// The latencies (ms) recorded since the last call.
    func take() -> [Double] {
        samples.withLock { samples in
            defer { samples = [] }
            return samples
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        finished.wait()
    }
}
