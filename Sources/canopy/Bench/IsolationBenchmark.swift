// IsolationBenchmark -- `canopy bench isolation`: small reads of one namespace while another opens or publishes.
//
// Starts a daemon as a child process, fills namespace A with a large tree (about `--megabytes` of JSON) and
// namespace B with a small one, and restarts the daemon so that A must be loaded again. One client then reads a
// small path of B in a loop while (1) nothing else happens (baseline), (2) a request for A makes the daemon load
// A's tree, and (3) a publish of a generated event (`--items`, `--attendees`, as `bench publish`) is computed and
// committed on A. Each phase prints the latencies of B's reads that were due during it (one is due every
// millisecond, and a read's latency counts from when it was due) as p50, p99 and max, and the phase's duration.
// `--server` runs another `canopy` binary, to compare builds on the same machine.

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
        print(
            "canopy bench isolation: A holds ~\(megabytes) MB of JSON; "
                + "publish \(shape.items) items x \(shape.attendees) attendees")
        var server = try PublishBenchServer(namespace: "a", binary: binary, dataDirectory: data)
        let fillStart = benchNow()
        try Self.fill(server, megabytes: megabytes)
        let b = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 60)
        let admin = [("Authorization", "Bearer \(server.adminCredential)")]
        guard try b.request("PUT", "/room/title.json?ns=b", headers: admin, body: Array(#""hello""#.utf8)).status == 200
        else { throw CommandFailure("could not write namespace b") }
        b.close()
        let event = PublishBenchEvent(shape: shape, seed: 2026)
        try server.put(PublishLayout.pendingContent, event.pendingContent(revision: 0))
        print("filled A in \(Int(PublishBenchmark.milliseconds(benchNow() - fillStart))) ms; restarting the daemon")
        server.stop()
        server = try PublishBenchServer(namespace: "a", binary: binary, dataDirectory: data)
        defer { server.stop() }
        // B is opened before the phases (its own first load is not what is measured).
        try BReader.open(port: server.port, headers: admin)

        let reader = BReader(port: server.port, credential: server.adminCredential)
        reader.start()
        defer { reader.stop() }
        Thread.sleep(forTimeInterval: 0.2)
        let baselineStart = benchNow()
        Thread.sleep(forTimeInterval: 1)
        let baseline = reader.samples(dueFrom: baselineStart, to: benchNow())
        print(Self.row("baseline (1 s)", baseline, phaseMilliseconds: 1000))

        let loadStart = benchNow()
        try server.request("GET", "/bulk/c0/k0.json")
        let loadEnd = benchNow()
        Thread.sleep(forTimeInterval: 0.5)  // the reads that were due during the phase complete
        print(
            Self.row(
                "while A (\(megabytes) MB) opens", reader.samples(dueFrom: loadStart, to: loadEnd),
                phaseMilliseconds: PublishBenchmark.milliseconds(loadEnd - loadStart)))

        let publishStart = benchNow()
        try server.request("POST", "/.canopy/publish")
        let publishEnd = benchNow()
        Thread.sleep(forTimeInterval: 0.5)
        print(
            Self.row(
                "while A publishes", reader.samples(dueFrom: publishStart, to: publishEnd),
                phaseMilliseconds: PublishBenchmark.milliseconds(publishEnd - publishStart)))
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

    static func row(_ name: String, _ samples: [Double], phaseMilliseconds: Double) -> String {
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        return String(
            format: "%-34@ phase %8.1f ms   B reads: %6d   p50 %7.2f ms   p99 %8.2f ms   max %8.2f ms",
            name as NSString, phaseMilliseconds, sorted.count, percentile(0.5), percentile(0.99), sorted.last ?? 0)
    }
}

/// One client reading a small path of namespace B on its own thread, one read due every `interval`.
///
/// A read's latency counts from when it was due, not from when it was sent: a stall of the daemon then shows in
/// every read it delayed (no coordinated omission), not just in the one read that was waiting.
final class BReader: Sendable {
    /// Reads namespace B once (opening it, so its own first load is not what a phase measures) and checks it
    /// holds the value the benchmark wrote.
    static func open(port: Int, headers: [(String, String)]) throws {
        let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 60)
        defer { client.close() }
        guard try client.request("GET", "/room/title.json?ns=b", headers: headers).text == #""hello""# else {
            throw CommandFailure("namespace b does not hold its value")
        }
    }

    private let port: Int
    private let credential: String
    /// (when the read was due, its latency in ms), in order.
    private let recorded = Mutex<[(due: UInt64, milliseconds: Double)]>([])
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
            let interval: UInt64 = 1_000_000
            var due = benchNow()
            while running.load(ordering: .relaxed) {
                let now = benchNow()
                if now < due { usleep(UInt32((due - now) / 1000)) }
                guard let response = try? client.request("GET", "/room/title.json?ns=b", headers: headers),
                    response.status == 200, response.text == #""hello""#
                else {
                    break
                }
                let elapsed = PublishBenchmark.milliseconds(benchNow() - due)
                recorded.withLock { [due] in $0.append((due, elapsed)) }
                due += interval
            }
            client.close()
            finished.signal()
        }.start()
    }

    /// The latencies (ms) of the reads that were due between `start` and `end` (and have completed).
    func samples(dueFrom start: UInt64, to end: UInt64) -> [Double] {
        recorded.withLock { $0.filter { $0.due >= start && $0.due <= end }.map(\.milliseconds) }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        finished.wait()
    }
}
