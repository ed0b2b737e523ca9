// FanoutBenchmark -- `canopy bench fanout`: realtime fan-out over loopback, compared with Redis pub/sub.
//
// Per subscriber count N, two scenarios, each against a freshly started server per round: (A) N subscribers on one
// location and one writer, (B) N subscribers on their own paths with writes spread round-robin — each on Canopy
// (the Firebase wire protocol over WebSocket) and on Redis pub/sub (SUBSCRIBE/PUBLISH over RESP). The writer keeps
// a bounded window of writes in flight (a write is done when every expected subscriber has it) and stamps each
// payload with monotonic nanoseconds; subscribers run in this process, servers in child processes.
//
// On a small shared machine one round can run 20% faster or slower than the next for either server, so each
// scenario runs `--rounds` (default 5) Canopy/Redis pairs back to back, which server goes first alternating from
// pair to pair; the table shows each side's median round and the ratio is the median of the pairs' ratios.
//
// `--tls` runs the Canopy side over TLS (a daemon started with a throw-away certificate, clients on wss);
// `--compare-tls` pairs Canopy over TLS with Canopy in plaintext instead of Redis, for the cost of TLS in one run.

import CanopyCore
import CanopyNet
import Foundation

/// `canopy bench fanout [--subscribers 100,1000,10000] [--writes M] [--rounds K] [--scenario a|b]
/// [--sync full|normal] [--url URL --token T] [--no-redis] [--tls | --compare-tls] [--tls-cert F --tls-key F --tls-ca F]`.
struct FanoutBenchmark {
    /// The default connection cap of a daemon given by `--url` (the benchmark starts its own daemons with room for
    /// every subscriber and the writer); the writer needs one connection.
    private static let daemonConnectionCap = 10_000

    var subscriberCounts = [100, 1_000, 10_000]
    var writes: Int?
    /// Canopy/Redis round pairs per scenario and subscriber count.
    var rounds = 5
    var url: String?
    var token: String?
    var redis = true
    /// Which scenarios to run: A (one location), B (own paths), or both.
    var scenarioA = true
    var scenarioB = true
    /// The started daemon's SQLite durability (`serve --sync`); `normal` shows what fsync per commit costs.
    var sync = "full"
    /// The Canopy side over TLS (`--tls`, or `--url https://…`).
    var tls = false
    /// Pair Canopy over TLS with Canopy in plaintext (instead of with Redis).
    var compareTLS = false
    var tlsOptions = BenchTLSOptions()
    /// A client core busier than this during writes is reported as saturated: the client bounds the figure.
    static let saturatedCoreShare = 0.9

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--subscribers": subscriberCounts = try arguments.ints(for: option, in: 1...100_000)
            case "--writes": writes = try arguments.int(for: option, in: 1...1_000_000)
            case "--rounds": rounds = try arguments.int(for: option, in: 1...20)
            case "--url": url = try arguments.value(for: option)
            case "--token": token = try arguments.value(for: option)
            case "--no-redis": redis = false
            case "--tls": tls = true
            case "--compare-tls": compareTLS = true
            case "--sync":
                let text = try arguments.value(for: option)
                guard ["full", "normal"].contains(text) else { throw .invalidValue(option, text, expected: "full or normal") }
                sync = text
            case "--scenario":
                let text = try arguments.value(for: option)
                switch text.lowercased() {
                case "a": (scenarioA, scenarioB) = (true, false)
                case "b": (scenarioA, scenarioB) = (false, true)
                case "ab", "both": (scenarioA, scenarioB) = (true, true)
                default: throw .invalidValue(option, text, expected: "a, b or ab")
                }
            default:
                guard try tlsOptions.parse(option, &arguments) else {
                    throw .unknownOption(option, command: "bench fanout")
                }
            }
        }
        if url != nil && token == nil { throw .missingOption("--token") }
        if let url {
            guard !compareTLS else {
                throw UsageError(message: "--compare-tls starts its own daemons: it cannot be used with --url")
            }
            guard tlsOptions.certificateFile == nil && tlsOptions.keyFile == nil else {
                throw UsageError(message: "--tls-cert/--tls-key are for the daemon the benchmark starts, not --url")
            }
            tls = url.hasPrefix("https://") || url.hasPrefix("wss://")
        } else {
            try tlsOptions.validate()
            if tlsOptions.givesFiles && !compareTLS { tls = true }
        }
        if compareTLS { (tls, redis) = (true, false) }
    }

    func run() throws {
        var certificate: BenchCertificate?
        var clientTLS: TLSClientContext?
        if tls && url == nil {
            certificate = try tlsOptions.materialize()
            clientTLS = try certificate?.clientContext()
        } else if tls {
            clientTLS = try BenchCertificate.trusting(caFile: tlsOptions.caFile)
        }
        defer { certificate?.remove() }
        let context = RoundContext(certificate: certificate, clientTLS: clientTLS)
        let largest = subscriberCounts.max() ?? 0
        // Each process holds about N sockets; children inherit the raised limit.
        let fdLimit = FanoutChild.raiseOpenFileLimit(to: largest + 4_096)
        let payloadBytes = FanoutPayload.json(seq: 0, sentAt: monotonicNanoseconds()).utf8.count
        print(
            "machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; open-file limit \(fdLimit); "
                + "payload ~\(payloadBytes) B; server: \(url ?? "canopy serve --sync \(sync) (child process, fresh per round)")"
                + (compareTLS ? "; TLS against plaintext (pairs: canopy over TLS, canopy in plaintext)" : "")
                + (tls && !compareTLS ? "; over TLS" : ""))
        if redis, FanoutChild.findExecutable("redis-server") == nil {
            print("note: redis-server not found on PATH — skipping the Redis comparison (apt-get install redis-server)")
        }
        var failedRounds = 0
        for requested in subscriberCounts {
            var n = url == nil ? requested : min(requested, Self.daemonConnectionCap - 1)
            var notes: [String] = []
            if n < requested {
                notes.append("a default daemon caps connections at \(Self.daemonConnectionCap): N clamped to \(n)")
            }
            if n + 256 > fdLimit {
                n = max(1, fdLimit - 256)
                notes.append("open-file limit \(fdLimit): N clamped to \(n)")
            }
            let m = writes ?? Self.defaultWrites(subscribers: n)
            let mB = writes ?? Self.defaultSpreadWrites
            print("\n== N = \(n) subscribers, M = \(m) writes (A), \(mB) (B); \(rounds) round(s) each ==")
            for note in notes { print("note: \(note)") }
            var rows: [FanoutResult] = []
            var ratios: [PairRatios] = []
            for spread in [false, true] where spread ? scenarioB : scenarioA {
                let writes = spread ? mB : m
                var canopyRuns: [FanoutResult] = []
                var redisRuns: [FanoutResult] = []
                var pairRatios: [Double] = []
                var cpuRatios: [Double] = []
                // The other side of a pair: Redis, or (with --compare-tls) Canopy in plaintext.
                func otherRound() throws -> FanoutResult? {
                    if compareTLS {
                        return try canopyRound(subscribers: n, writes: writes, spread: spread, context, tls: false)
                    }
                    return redis ? try redisRound(subscribers: n, writes: writes, spread: spread) : nil
                }
                for round in 0..<rounds {
                    // Whichever server runs second in a pair meets a warmer (or busier) machine: take turns.
                    var other: FanoutResult?
                    if round % 2 == 1 { other = try otherRound() }
                    let canopy = try canopyRound(subscribers: n, writes: writes, spread: spread, context, tls: tls)
                    canopyRuns.append(canopy)
                    if round % 2 == 0 { other = try otherRound() }
                    if let other {
                        redisRuns.append(other)
                        if other.eventsPerSecond > 0 { pairRatios.append(canopy.eventsPerSecond / other.eventsPerSecond) }
                        if let mine = canopy.serverMicrosecondsPerEvent, let theirs = other.serverMicrosecondsPerEvent,
                            theirs > 0
                        {
                            cpuRatios.append(mine / theirs)
                        }
                    }
                }
                for run in canopyRuns + redisRuns where run.delivered != run.expected || run.note != nil {
                    failedRounds += 1
                    print("  ! \(run.label): delivered \(run.delivered) of \(run.expected)\(run.note.map { " — " + $0 } ?? "")")
                }
                rows.append(Self.median(canopyRuns))
                if !redisRuns.isEmpty { rows.append(Self.median(redisRuns)) }
                if !pairRatios.isEmpty { ratios.append((spread ? "B" : "A", pairRatios, cpuRatios)) }
            }
            printTable(rows, ratios: ratios)
        }
        if failedRounds > 0 { throw CommandFailure("\(failedRounds) benchmark rounds did not complete (see '!' lines)") }
    }

    /// Enough writes for about a million deliveries, between 200 and 5,000 (scenario A).
    static func defaultWrites(subscribers: Int) -> Int { min(5_000, max(200, 1_000_000 / subscribers)) }

    /// Scenario B delivers each write once: enough writes to run for seconds, not milliseconds.
    static let defaultSpreadWrites = 20_000

    /// The round with the median throughput (the upper one of an even count).
    private static func median(_ runs: [FanoutResult]) -> FanoutResult {
        let sorted = runs.sorted { $0.eventsPerSecond < $1.eventsPerSecond }
        var row = sorted[sorted.count / 2]
        if runs.count > 1 { row.label += " (median of \(runs.count))" }
        return row
    }

    /// The window: about two deliveries in flight per subscriber (at least 1,000).
    private static func eventsInFlight(subscribers: Int) -> Int { max(2 * subscribers, 1_000) }

    /// The TLS material of a run: the started daemons' certificate and the clients' trust.
    private struct RoundContext {
        var certificate: BenchCertificate?
        var clientTLS: TLSClientContext?
    }

    /// One scenario's per-pair ratios: throughput, and (when both sides report it) server CPU per event.
    private typealias PairRatios = (scenario: String, values: [Double], cpu: [Double])

    // MARK: Rounds

    private func canopyRound(
        subscribers n: Int, writes m: Int, spread: Bool, _ context: RoundContext, tls: Bool
    ) throws -> FanoutResult {
        var daemon: FanoutChild?
        defer { daemon?.stop() }
        let host: String
        let port: Int
        let credential: String
        if let url {
            (host, port) = try Self.hostAndPort(url)
            credential = token ?? ""
        } else {
            let (child, secret) = try FanoutChild.startDaemon(
                sync: sync, maxConnections: n + 64, tls: tls ? context.certificate : nil)
            daemon = child
            (host, port, credential) = ("127.0.0.1", child.port, secret)
        }
        let namespace = "fanout-\(spread ? "b" : "a")\(n)-\(UInt32.random(in: 0...UInt32.max))"
        let loop = try EventLoop()
        let transport = FanoutCanopyTransport(
            loop: loop, host: host, port: port, namespace: namespace, credential: credential,
            tls: tls ? context.clientTLS : nil)
        let over = compareTLS ? (tls ? " tls" : " plain") : (tls ? " over tls" : "")
        let label = spread ? "B canopy\(over), own /users/<i> each" : "A canopy\(over), all on /room"
        return run(loop: loop, transport: transport, server: daemon, subscribers: n, writes: m, spread: spread, label)
    }

    private func redisRound(subscribers n: Int, writes m: Int, spread: Bool) throws -> FanoutResult? {
        guard let server = try FanoutChild.startRedis(maxClients: n + 64) else { return nil }
        defer { server.stop() }
        let loop = try EventLoop()
        let transport = FanoutRedisTransport(loop: loop, host: "127.0.0.1", port: server.port)
        let label = spread ? "B redis, own channel each" : "A redis, SUBSCRIBE room"
        return run(loop: loop, transport: transport, server: server, subscribers: n, writes: m, spread: spread, label)
    }

    private func run(
        loop: EventLoop, transport: any FanoutTransport, server: FanoutChild?, subscribers n: Int, writes m: Int,
        spread: Bool, _ label: String
    ) -> FanoutResult {
        let tracker = FanoutTracker(
            writes: m, deliveriesPerWrite: spread ? 1 : n, maxEventsInFlight: Self.eventsInFlight(subscribers: n))
        let rssBefore = server?.rssKiB
        var rssListening: Int?
        var cpuAtStart: (client: Double, server: Double?, wallNs: UInt64)?
        var cpuAtEnd: (client: Double, server: Double?, wallNs: UInt64)?
        let round = FanoutRound(
            loop: loop, transport: transport, subscribers: n, spread: spread, tracker: tracker,
            onListening: {
                rssListening = server?.rssKiB
                cpuAtStart = (FanoutChild.ownCPUSeconds(), server?.cpuSeconds, monotonicNanoseconds())
            },
            onFinished: { cpuAtEnd = (FanoutChild.ownCPUSeconds(), server?.cpuSeconds, monotonicNanoseconds()) })
        round.run()
        var perConnection: Double?
        if let rssBefore, let rssListening { perConnection = Double(rssListening - rssBefore) / Double(n) }
        var note = round.failure
        if tracker.unexpected > 0 { note = (note.map { $0 + "; " } ?? "") + "\(tracker.unexpected) unexpected events" }
        var result = tracker.result(label: label, rssPerConnectionKiB: perConnection, note: note)
        if let cpuAtStart, let cpuAtEnd, tracker.delivered > 0 {
            let events = Double(tracker.delivered)
            result.clientMicrosecondsPerEvent = (cpuAtEnd.client - cpuAtStart.client) * 1e6 / events
            let wall = Double(cpuAtEnd.wallNs &- cpuAtStart.wallNs) / 1e9
            if wall > 0 { result.clientCoreShare = (cpuAtEnd.client - cpuAtStart.client) / wall }
            if let before = cpuAtStart.server, let after = cpuAtEnd.server {
                result.serverMicrosecondsPerEvent = (after - before) * 1e6 / events
            }
        }
        return result
    }

    // MARK: Output

    private func printTable(_ rows: [FanoutResult], ratios: [PairRatios]) {
        print(
            "scenario".padding(toLength: 52, withPad: " ", startingAt: 0)
                + "    events/s    p50 ms    p99 ms    max ms  RSS KiB/conn  CPU us/event srv+cli  cli core")
        for row in rows {
            let rss = row.rssPerConnectionKiB.map { String(format: "%12.1f", $0) } ?? "         n/a"
            let server = row.serverMicrosecondsPerEvent.map { String(format: "%8.2f", $0) } ?? "     n/a"
            let client = row.clientMicrosecondsPerEvent.map { String(format: "%.2f", $0) } ?? "n/a"
            print(
                row.label.padding(toLength: 52, withPad: " ", startingAt: 0)
                    + String(format: "%12.0f %9.2f %9.2f %9.2f  ", row.eventsPerSecond, row.p50, row.p99, row.max)
                    + rss + "  " + server + " + " + client.padding(toLength: 8, withPad: " ", startingAt: 0)
                    + (row.clientCoreShare.map { String(format: "%7.0f%%", $0 * 100) } ?? "     n/a"))
        }
        for row in rows {
            guard let share = row.clientCoreShare, share >= Self.saturatedCoreShare else { continue }
            print(
                "note: the benchmark client kept a core \(Int(share * 100))% busy in '\(row.label)': it saturates "
                    + "its core, so the client, not the server, may bound this throughput")
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        func each(_ values: [Double]) -> String { values.map { String(format: "%.2f", $0) }.joined(separator: " ") }
        for (scenario, values, cpu) in ratios {
            if compareTLS {
                print(
                    "ratio \(scenario) tls/plaintext: throughput " + String(format: "%.2f", median(values))
                        + " (median of pairs: \(each(values)))"
                        + (cpu.isEmpty
                            // /proc counts CPU in 10 ms ticks: a tiny round's daemon may show none.
                            ? "; server CPU per event not resolved (a daemon used under /proc's 10 ms tick)"
                            : "; server CPU per event " + String(format: "%.2f", median(cpu))
                                + " (pairs: \(each(cpu)))"))
            } else {
                print(
                    "ratio \(scenario) canopy/redis: throughput "
                        + String(format: "%.2f", median(values)) + " (goal >= 1.0; median of pairs: \(each(values)))")
            }
        }
    }

    /// `http://host:port` (or ws://, https://, wss://) to a host and port (443 or 80 when the URL names none).
    private static func hostAndPort(_ url: String) throws -> (String, Int) {
        var rest = Substring(url)
        var secure = false
        for scheme in ["http://", "ws://", "https://", "wss://"] where rest.hasPrefix(scheme) {
            rest = rest.dropFirst(scheme.count)
            secure = scheme == "https://" || scheme == "wss://"
        }
        rest = rest.prefix { $0 != "/" && $0 != "?" }
        if let colon = rest.lastIndex(of: ":"), !rest[colon...].contains("]"),
            let port = Int(rest[rest.index(after: colon)...])
        {
            return (String(rest[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port)
        }
        guard !rest.isEmpty, rest != Substring(url) else {
            throw CommandFailure("--url must look like http://127.0.0.1:9000 or https://db.example.com")
        }
        return (String(rest).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), secure ? 443 : 80)
    }
}
