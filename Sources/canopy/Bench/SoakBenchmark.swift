// SoakBenchmark -- `canopy bench soak`: thousands of WebSocket listeners held for a long time under churn and
// steady writes, watching the daemon's memory, descriptors, threads and delivery latency for drift.
//
// Starts `canopy serve` as a child process (rules: any signed-in user reads and writes), connects `--listeners`
// steady listeners (each `auth`s with its own freshly minted token and listens on one of `--rooms` rooms), then for
// `--duration`: writes `--write-rate` values per second to the rooms over one admin socket (each reaches
// listeners/rooms steady listeners), runs `--churn-rate` churn cycles per second (connect, auth, listen, hold,
// unlisten, token refresh, disconnect), and refreshes every steady listener's token once per `--refresh-every`.
// Every `--interval` it samples the daemon's VmRSS, descriptors (/proc/PID/fd) and threads (/proc/PID/task), the
// steady listeners' delivery latency, and this client's CPU per thread. At the end it stops the churn, waits for
// the churning sockets to close and compares descriptors with the baseline taken before the churn started.
// Verdict: RSS of the last sample against the first after the warm-up; p99 of the last fifth of the samples after
// the warm-up (pooled) against the first fifth; threads over every sample; the client's busiest thread.

import CCanopyLinux
import CanopyAuth
import CanopyCore
import CanopyNet
import Foundation

/// `canopy bench soak [--listeners N] [--duration D] [--churn-rate N] [--write-rate N] ...`.
struct SoakBenchmark {
    var listeners = 10_000
    var durationSeconds = 1_800
    var churnRate = 20.0
    var churnHoldMilliseconds = 1_000
    var writeRate = 50.0
    var rooms = 100
    var refreshEverySeconds = 600
    var intervalSeconds: Int?
    var warmupSeconds: Int?
    var clientLoops = 2
    var binary: String?

    static let usage = """
        canopy bench soak [--listeners <n>] [--duration <d>] [--churn-rate <n/s>] [--write-rate <n/s>]
                          [--rooms <n>] [--churn-hold <ms>] [--refresh-every <d>] [--interval <d>]
                          [--warmup <d>] [--client-loops <n>] [--server <canopy binary>]
          Holds <n> steady WebSocket listeners (default 10000) for <d> (default 30m; 90s, 5m, 1h) with churn
          (default 20 cycles/s: connect, auth, listen, unlisten, token refresh, disconnect) and steady writes
          (default 50/s, each to one of 100 rooms); samples the daemon's RSS, descriptors, threads and the
          steady listeners' p50/p99 delivery latency every interval and prints a verdict: RSS drift <= 5 %
          after warm-up, descriptors back to baseline after churn, threads constant, p99 of the last fifth
          of the run after warm-up <= 1.2 x that of the first fifth; and whether the client saturated a core.
        """

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--listeners": listeners = try arguments.int(for: option, in: 1...100_000)
            case "--duration":
                durationSeconds = try Self.duration(try arguments.value(for: option), option)
            case "--churn-rate": churnRate = Double(try arguments.int(for: option, in: 0...10_000))
            case "--churn-hold": churnHoldMilliseconds = try arguments.int(for: option, in: 0...600_000)
            case "--write-rate": writeRate = Double(try arguments.int(for: option, in: 0...100_000))
            case "--rooms": rooms = try arguments.int(for: option, in: 1...100_000)
            case "--refresh-every":
                refreshEverySeconds = try Self.duration(try arguments.value(for: option), option)
            case "--interval":
                intervalSeconds = try Self.duration(try arguments.value(for: option), option)
            case "--warmup": warmupSeconds = try Self.duration(try arguments.value(for: option), option)
            case "--client-loops": clientLoops = try arguments.int(for: option, in: 1...64)
            case "--server": binary = try arguments.value(for: option)
            default: throw .unknownOption(option, command: "bench soak")
            }
        }
    }

    /// Seconds in `90`, `90s`, `5m`, `1h`.
    static func duration(_ text: String, _ option: String) throws(UsageError) -> Int {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600]
        var digits = Substring(text)
        var unit = 1
        if let last = text.last, let factor = units[last] {
            digits = digits.dropLast()
            unit = factor
        }
        guard let value = Int(digits), value > 0, value <= 7 * 86_400 / unit else {
            throw .invalidValue(option, text, expected: "a duration such as 90s, 5m or 1h")
        }
        return value * unit
    }

    /// One sampled row.
    private struct Sample {
        var label: String
        var elapsed: Double
        var rssKiB: Int
        var descriptors: Int
        var threads: Int
        var counters = SoakCounters()
        var p50: Double?
        var p99: Double?
        var daemonCPU: Double = 0
        var clientCPU: Double = 0
        var busiestClientThread: Double = 0
        /// The length of the interval the counters cover.
        var seconds: Double = 1
        /// Latency samples (pushes to steady listeners) in the interval.
        var deliveries = 0
        /// The latency samples themselves (µs, sorted), for the start and end windows of the verdict.
        var latencies: [UInt32] = []
    }

    func run() throws {
        let interval = intervalSeconds ?? min(60, max(5, durationSeconds / 20))
        let warmup = warmupSeconds ?? min(300, durationSeconds / 5)
        let maxChurnOpen = max(16, Int(churnRate * Double(churnHoldMilliseconds + 2_000) / 1000))
        let wantedDescriptors = listeners + maxChurnOpen + 256
        let limit = FanoutChild.raiseOpenFileLimit(to: wantedDescriptors)
        guard limit >= wantedDescriptors else {
            throw CommandFailure(
                "the open-file limit is \(limit); \(listeners) listeners and \(maxChurnOpen) churning sockets need"
                    + " \(wantedDescriptors) in this process and in the daemon: raise it (ulimit -n) or pass fewer"
                    + " --listeners")
        }
        let rulesFile = NSTemporaryDirectory() + "canopy-soak-rules-\(getpid()).json"
        try #"{"rules": {".read": "auth != null", ".write": "auth != null"}}"#.write(
            toFile: rulesFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: rulesFile) }
        let server = try PublishBenchServer(
            namespace: "soak", binary: binary,
            arguments: ["--rules", rulesFile, "--max-connections", "\(wantedDescriptors)"])
        defer { server.stop() }
        // Ctrl-C (or SIGTERM) of a long soak stops the daemon child too, instead of leaving it running.
        let interruptions = [SIGINT, SIGTERM].map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                print("\ncanopy bench soak: interrupted; stopping the daemon")
                server.stop()
                try? FileManager.default.removeItem(atPath: rulesFile)
                exit(130)
            }
            source.resume()
            return source
        }
        defer { for source in interruptions { source.cancel() } }
        let pid = server.processID
        let secret = try SecretFile.loadOrCreate(path: server.dataDirectoryPath + "/signing.key")
        var roomsValue: [JSONMember] = []
        for room in 0..<rooms { roomsValue.append(JSONMember("r\(room)", ["last": "initial"])) }
        try server.put(try Path(parsing: "/rooms"), .object(roomsValue))

        print(
            "canopy bench soak: \(listeners) steady listeners on \(rooms) rooms for \(Self.format(durationSeconds));"
                + " writes \(Int(writeRate))/s (each to \(listeners / rooms) listeners), churn \(Int(churnRate))/s"
                + " (hold \(churnHoldMilliseconds) ms), token refresh of each steady listener every"
                + " \(Self.format(refreshEverySeconds)); warm-up \(Self.format(warmup)), interval"
                + " \(Self.format(interval)); \(clientLoops) client loops; daemon pid \(pid)")
        fflush(nil)
        let loops = try (0..<clientLoops).map { _ in
            try SoakClientLoop(port: server.port, namespace: "soak", rooms: rooms, signingSecret: secret)
        }
        defer { for loop in loops { loop.close() } }
        let cpu = CPUSampler(daemon: pid)

        // Steady listeners, in batches spread over the loops.
        let connectStart = benchNow()
        var opened = 0
        while opened < listeners {
            let batch = min(200 * clientLoops, listeners - opened)
            for (k, loop) in loops.enumerated() {
                let share = (batch + clientLoops - 1 - k) / clientLoops
                let first =
                    opened + (0..<k).reduce(0) { sum, j in sum + (batch + clientLoops - 1 - j) / clientLoops }
                loop.openSteady(first..<(first + share))
            }
            opened += batch
            let deadline = Date().addingTimeInterval(60)
            while true {
                let counters = Self.take(loops)
                if counters.failures > 0 {
                    throw CommandFailure(
                        "opening steady listeners failed: \(counters.firstFailures.joined(separator: "; "))")
                }
                if counters.steadyReady >= opened { break }
                guard Date() < deadline else {
                    throw CommandFailure(
                        "timed out: \(counters.steadyReady) of \(opened) steady listeners ready")
                }
                usleep(20_000)
            }
        }
        let connectSeconds = Double(benchNow() - connectStart) / 1e9
        print(
            String(
                format: "%d steady listeners connected and listening in %.1f s", listeners, connectSeconds))
        fflush(nil)
        loops[0].openWriter(adminCredential: server.adminCredential)
        let writerDeadline = Date().addingTimeInterval(30)
        while !loops[0].writerReady {
            guard Date() < writerDeadline else {
                throw CommandFailure("the writer's socket did not authenticate")
            }
            usleep(20_000)
        }
        Thread.sleep(forTimeInterval: 2)
        _ = Self.take(loops)
        _ = cpu.interval()
        var samples: [Sample] = [Self.sample("baseline", elapsed: 0, pid: pid)]
        print(Self.header)
        print(Self.row(samples[0]))

        let perLoop = Double(clientLoops)
        for (k, loop) in loops.enumerated() {
            loop.startLoad(
                writeRate: k == 0 ? writeRate : 0,
                churnRate: churnRate / perLoop, churnHoldMilliseconds: churnHoldMilliseconds,
                refreshRate: Double(listeners) / Double(refreshEverySeconds) / perLoop,
                maxChurnOpen: maxChurnOpen)
        }
        let start = benchNow()
        var next = Double(interval)
        while next <= Double(durationSeconds) + 0.001 {
            let wait = next - Double(benchNow() - start) / 1e9
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            var sample = Self.sample(next <= Double(warmup) ? "warm-up" : "load", elapsed: next, pid: pid)
            Self.measure(&sample, loops: loops, cpu: cpu)
            samples.append(sample)
            print(Self.row(sample))
            fflush(nil)
            next += Double(interval)
        }
        for loop in loops { loop.stopLoad() }
        // Churn cycles under way finish (hold + a round trip), then their sockets close.
        let drainDeadline = Date().addingTimeInterval(Double(churnHoldMilliseconds) / 1000 + 20)
        var churnOpen = 0
        repeat {
            usleep(100_000)
            churnOpen = Self.gauge(loops).churnOpen
        } while churnOpen > 0 && Date() < drainDeadline
        Thread.sleep(forTimeInterval: 3)
        var after = Self.sample("after churn", elapsed: Double(benchNow() - start) / 1e9, pid: pid)
        Self.measure(&after, loops: loops, cpu: cpu)
        samples.append(after)
        print(Self.row(after))
        verdict(samples, churnStillOpen: churnOpen)
    }

    // MARK: - measuring

    private static func take(_ loops: [SoakClientLoop]) -> SoakCounters {
        var total = SoakCounters()
        for loop in loops { total.add(loop.take()) }
        return total
    }

    /// The gauges only (a take whose counts are put back is not needed: gauges are read at every take).
    private static func gauge(_ loops: [SoakClientLoop]) -> SoakCounters {
        var total = SoakCounters()
        for loop in loops {
            let taken = loop.peekGauges()
            total.churnOpen += taken.churnOpen
            total.steadyReady += taken.steadyReady
        }
        return total
    }

    private static func measure(_ sample: inout Sample, loops: [SoakClientLoop], cpu: CPUSampler) {
        sample.counters = take(loops)
        var latencies = sample.counters.latenciesMicroseconds
        latencies.sort()
        if !latencies.isEmpty {
            sample.p50 = Double(latencies[latencies.count / 2]) / 1000
            sample.p99 = Double(latencies[min(latencies.count - 1, latencies.count * 99 / 100)]) / 1000
        }
        sample.deliveries = latencies.count
        sample.latencies = latencies
        sample.counters.latenciesMicroseconds = []
        let usage = cpu.interval()
        sample.daemonCPU = usage.daemon
        sample.clientCPU = usage.client
        sample.busiestClientThread = usage.busiestClientThread
        sample.seconds = usage.seconds
    }

    private static func sample(_ label: String, elapsed: Double, pid: Int32) -> Sample {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let rss =
            status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap {
                Int($0.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
            } ?? -1
        let descriptors =
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
        let threads =
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
        return Sample(
            label: label, elapsed: elapsed, rssKiB: rss, descriptors: descriptors, threads: threads)
    }

    // MARK: - report

    private static let columns: [(String, Int)] = [
        ("phase", -11), ("time", 6), ("RSS MiB", 8), ("fds", 6), ("threads", 8), ("deliv/s", 8),
        ("p50 ms", 7),
        ("p99 ms", 7), ("writes/s", 9), ("churn/s", 8), ("refresh/s", 10), ("daemon CPU", 11),
        ("client CPU", 11),
        ("busiest thr", 12), ("failures", 9),
    ]

    private static func line(_ cells: [String]) -> String {
        zip(columns, cells).map { column, cell in
            let padding = String(repeating: " ", count: max(0, abs(column.1) - cell.count))
            return column.1 < 0 ? cell + padding : padding + cell
        }.joined(separator: " ")
    }

    private static var header: String { line(columns.map(\.0)) }

    private static func row(_ s: Sample) -> String {
        let c = s.counters
        func rate(_ count: Int) -> String { String(format: "%.0f", Double(count) / s.seconds) }
        func ms(_ value: Double?) -> String { value.map { String(format: "%.1f", $0) } ?? "-" }
        func percent(_ value: Double) -> String { String(format: "%.0f%%", value * 100) }
        let measured = s.label != "baseline"
        return line([
            s.label, format(Int(s.elapsed.rounded())), String(format: "%.1f", Double(s.rssKiB) / 1024),
            "\(s.descriptors)", "\(s.threads)", measured ? rate(s.deliveries) : "-", ms(s.p50), ms(s.p99),
            measured ? rate(c.writesAcknowledged) : "-", measured ? rate(c.churnCycles) : "-",
            measured ? rate(c.tokenRefreshes) : "-", measured ? percent(s.daemonCPU) : "-",
            measured ? percent(s.clientCPU) : "-", measured ? percent(s.busiestClientThread) : "-",
            "\(c.failures)",
        ])
    }

    private static func format(_ seconds: Int) -> String {
        seconds % 60 == 0 && seconds >= 60 ? "\(seconds / 60)m" : "\(seconds)s"
    }

    private func verdict(_ samples: [Sample], churnStillOpen: Int) {
        let baseline = samples[0]
        let load = samples.dropFirst().filter { $0.label == "load" }
        let after = samples[samples.count - 1]
        print("")
        guard let first = load.first, let last = load.last else {
            print("verdict: no sample after the warm-up: run longer than --warmup (or lower it)")
            return
        }
        var passed = true
        func line(_ ok: Bool, _ text: String) {
            if !ok { passed = false }
            print("  \(ok ? "PASS" : "FAIL")  \(text)")
        }
        print("verdict:")
        let drift = Double(last.rssKiB - first.rssKiB) / Double(max(first.rssKiB, 1)) * 100
        line(
            drift <= 5,
            String(
                format: "RSS drift after warm-up %+.1f %% (%.1f MiB at %@ → %.1f MiB at %@; goal ≤ 5 %%)",
                drift,
                Double(first.rssKiB) / 1024, Self.format(Int(first.elapsed)), Double(last.rssKiB) / 1024,
                Self.format(Int(last.elapsed))))
        line(
            after.descriptors <= baseline.descriptors + 2 && churnStillOpen == 0,
            "descriptors after churn \(after.descriptors) vs baseline \(baseline.descriptors) before churn"
                + " (goal: back to baseline, ±2)"
                + (churnStillOpen > 0 ? "; \(churnStillOpen) churn sockets still open" : ""))
        let threads = samples.map(\.threads)
        line(
            threads.min() == threads.max(),
            "threads \(threads.min() ?? 0)…\(threads.max() ?? 0) over every sample (goal: constant)")
        // The first and the last fifth of the load samples, pooled: one interval's p99 swings with whatever else
        // the machine does; a window of several intervals is what drifts, or not.
        let window = max(1, load.count / 5)
        let head = Array(load.prefix(window))
        let tail = Array(load.suffix(window))
        if let start = Self.p99(head), let end = Self.p99(tail) {
            let ratio = end / max(start, 0.001)
            line(
                ratio <= 1.2,
                String(
                    format: "p99 delivery latency end/start %.2f× (%.1f ms over %@–%@ → %.1f ms over %@–%@;"
                        + " goal ≤ 1.2×)",
                    ratio, start, Self.format(Int((head[0].elapsed - head[0].seconds).rounded())),
                    Self.format(Int(head[head.count - 1].elapsed)), end,
                    Self.format(Int((tail[0].elapsed - tail[0].seconds).rounded())),
                    Self.format(Int(tail[tail.count - 1].elapsed))
                ))
        } else {
            line(false, "no delivery latency measured (are writes enabled?)")
        }
        let failures = samples.reduce(0) { $0 + $1.counters.failures }
        line(failures == 0, "\(failures) failed requests or lost sockets" + Self.firstFailures(samples))
        let busiest = samples.map(\.busiestClientThread).max() ?? 0
        if busiest >= 0.9 {
            print(
                String(
                    format:
                        "  NOTE  the benchmark client saturated a core (busiest thread %.0f %%): the figures may"
                        + " measure the client; use more --client-loops or fewer listeners", busiest * 100))
        } else {
            print(
                String(
                    format: "  ok    client not saturated (busiest client thread %.0f %% of a core)",
                    busiest * 100))
        }
        print(passed ? "verdict: PASS" : "verdict: FAIL")
    }

    /// The p99 (ms) of the latency samples of `samples` pooled.
    private static func p99(_ samples: [Sample]) -> Double? {
        var pooled = samples.flatMap(\.latencies)
        guard !pooled.isEmpty else { return nil }
        pooled.sort()
        return Double(pooled[min(pooled.count - 1, pooled.count * 99 / 100)]) / 1000
    }

    private static func firstFailures(_ samples: [Sample]) -> String {
        let texts = samples.flatMap(\.counters.firstFailures).prefix(3)
        return texts.isEmpty ? "" : " (first: " + texts.joined(separator: "; ") + ")"
    }
}

/// CPU use of the daemon and of this process (per thread) between calls, as fractions of one core.
final class CPUSampler {
    private let daemon: Int32
    private var lastTime = benchNow()
    private var lastDaemon: Double
    private var lastThreads: [String: Double] = [:]

    init(daemon: Int32) {
        self.daemon = daemon
        lastDaemon = Self.cpuSeconds(stat: "/proc/\(daemon)/stat") ?? 0
        lastThreads = Self.threads()
    }

    func interval() -> (daemon: Double, client: Double, busiestClientThread: Double, seconds: Double) {
        let now = benchNow()
        let seconds = max(Double(now - lastTime) / 1e9, 0.001)
        let daemonNow = Self.cpuSeconds(stat: "/proc/\(daemon)/stat") ?? lastDaemon
        let threads = Self.threads()
        var total = 0.0
        var busiest = 0.0
        for (tid, value) in threads {
            let delta = value - (lastThreads[tid] ?? 0)
            total += delta
            busiest = max(busiest, delta)
        }
        defer {
            lastTime = now
            lastDaemon = daemonNow
            lastThreads = threads
        }
        return ((daemonNow - lastDaemon) / seconds, total / seconds, busiest / seconds, seconds)
    }

    private static func threads() -> [String: Double] {
        let tids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var out: [String: Double] = [:]
        for tid in tids { out[tid] = cpuSeconds(stat: "/proc/self/task/\(tid)/stat") }
        return out
    }

    /// utime + stime of a /proc stat file, in seconds.
    static func cpuSeconds(stat path: String) -> Double? {
        guard let stat = try? String(contentsOfFile: path, encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            return nil
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
