// Bench -- `canopy bench write|rules|…|cluster`: load generators against a real daemon over loopback (plaintext or TLS).

import CanopyCore
import CanopyNet
import CanopyServer
import CanopyStore
import Foundation
import Synchronization

struct BenchCommand: Command {
    static let name = "bench"
    static let abstract =
        "Benchmarks: write throughput/latency vs raw SQLite (write), rule evaluation (rules), long soak (soak), "
        + "cluster writes and failover (cluster)."
    static let usage = """
        canopy bench write [--writes <n>] [--clients <n>] [--sync full|normal] [--compare-redis | --no-redis]
                           [--tls | --compare-tls [--rounds <k>]] [--tls-cert <pem> --tls-key <pem> --tls-ca <pem>]
          Starts a daemon on a temporary data directory and drives it over loopback with small PUTs: sequential
          and with --clients concurrent connections (default 16), at two database sizes; then runs the same
          workload directly on SQLite with the same durability and prints Canopy / SQLite ratios. --tls serves
          and writes over HTTPS (a throw-away certificate made by openssl, or the files given). --compare-tls
          instead starts a daemon process in plaintext and one over TLS per round (<k> rounds, default 3, taking
          turns at going first) and prints keep-alive PUTs/s at 1, --clients and 50 connections, daemon and
          client CPU per write, and the TLS/plaintext ratios.
          Then (alone with --compare-redis) durable writes against redis-server --appendonly yes --appendfsync always,
          both child processes, both replying only once the write is on disk: REST keep-alive PUT, wire-protocol
          `p` awaiting its `ok`, and Redis SET of the same bytes, one write in flight per connection, at 1,
          --clients and 50 connections; writes/s, p50/p99, server CPU per write, client cores and the Canopy/Redis
          ratios. Redis rows are skipped, with the reason, when redis-server is not installed or with --no-redis.
        canopy bench rules [--iterations <n>]
        canopy bench fanout [--subscribers <n>[,<n>...]] [--writes <m>] [--rounds <k>] [--scenario a|b]
                            [--sync full|normal] [--url <url> --token <token>] [--no-redis]
                            [--tls | --compare-tls] [--tls-cert <pem> --tls-key <pem> --tls-ca <pem>]
          Each scenario runs <k> (default 5) Canopy/Redis round pairs back to back, taking turns at going
          first; the table shows each side's median round and the ratio is the median of the pairs' ratios.
          --tls: the Canopy side over wss (a daemon with a throw-away certificate, or the files given; with
          --url https://… the daemon given, trusted through --tls-ca or the system's CAs). --compare-tls pairs
          Canopy over TLS with Canopy in plaintext instead of Redis and prints the TLS/plaintext ratios.
          "cli core" is the benchmark client's CPU over wall time; a note says when it saturates a core.
        canopy bench publish [--items <n>] [--attendees <n>] [--tiers <n>] [--groups <n>] [--sockets <n>] [--seed <n>]
                             [--rounds <n>] [--no-incremental] [--background-writes <n>] [--server <canopy binary>]
          Times one atomic publish against the seed design's eight writes, then (unless --no-incremental)
          one publish over what the replay wrote (nothing changes) and an incremental publish: one item
          edited among <items>; commit and delivery ms, the daemon's CPU, bytes per affected subscriber,
          and subscribers that received something they do not listen to. --background-writes: meanwhile
          another connection PUTs <n> small values a second elsewhere in the event, as a live event's
          traffic would (a publish must not be held back by it).
        canopy bench isolation [--megabytes <n>] [--items <n>] [--attendees <n>] [--server <canopy binary>]
          p50/p99/max of small reads on namespace B while namespace A (a large tree) is loaded and while a
          publish is computed and committed on A.
        canopy bench coldstart [--objects <n>] [--fields <n>] [--value-bytes <n>] [--server <canopy binary>]
          Fills namespace A with <n> objects (default 200000 of 12 fields, about 200 MB stored), restarts the
          daemon before each request, and times A's first GET of a small path, first GET of the root with
          shallow=true, first listen over a WebSocket and over long polling, and first PUT, until A is fully
          loaded, its resident memory against its file's size, and p50/p99/max of namespace B's reads meanwhile.
        canopy bench namespaces [--count <n>] [--nodes <n>] [--idle <seconds>] [--server <canopy binary>]
                                [--serve-option <option>]...
          Creates <n> namespaces of about <nodes> nodes each, leaves them idle, and reports the daemon's
          threads, resident memory and open descriptors right after and after <idle> seconds.
        \(SoakBenchmark.usage)
        canopy bench connection [--ondisconnect <n>] [--listens <n>] [--server <canopy binary>]
                                [--serve-option <option>]...
          One socket queues <n> onDisconnect operations (default 200000) and closes, another listens at <n>
          locations (default 500000): the daemon's memory, and p50/p99/max of another client's small reads
          while the operations run and while a write fans out to every listen.
        \(ClusterBenchmark.usage)
        """

    var kind: String
    var writes = 2000
    var clients = 16
    var synchronousFull = true
    var iterations = 200_000
    var fanout: FanoutBenchmark?
    var publish: PublishBenchmark?
    var isolation: IsolationBenchmark?
    var coldStart: ColdStartBenchmark?
    var namespaces: NamespacesBenchmark?
    var soak: SoakBenchmark?
    var connection: ConnectionBenchmark?
    var cluster: ClusterBenchmark?
    /// `bench write --tls`: serve and write over HTTPS.
    var writeTLS = false
    /// `bench write --compare-tls`: plaintext against TLS in one run, daemons in child processes.
    var compareTLS = false
    var tlsOptions = BenchTLSOptions()
    /// `bench write --compare-tls` rounds (a plaintext and a TLS daemon each).
    var rounds = 3
    /// `bench write --compare-redis`: only the durable-write rows against Redis (`appendfsync always`).
    var compareRedisOnly = false
    /// `bench write --no-redis`: the durable-write rows without Redis.
    var skipRedis = false

    init(parsing arguments: inout Arguments) throws(UsageError) {
        let kinds = [
            "write", "rules", "fanout", "publish", "isolation", "coldstart", "namespaces", "soak", "connection",
            "cluster",
        ]
        guard let kind = arguments.nextPositional(), kinds.contains(kind) else {
            throw UsageError(
                message:
                    "expected 'canopy bench "
                        + "write|rules|fanout|publish|isolation|coldstart|namespaces|soak|connection|cluster'")
        }
        self.kind = kind
        if kind == "soak" {
            soak = try SoakBenchmark(parsing: &arguments)
            return
        }
        if kind == "fanout" {
            fanout = try FanoutBenchmark(parsing: &arguments)
            return
        }
        if kind == "publish" {
            publish = try PublishBenchmark(parsing: &arguments)
            return
        }
        if kind == "isolation" {
            isolation = try IsolationBenchmark(parsing: &arguments)
            return
        }
        if kind == "coldstart" {
            coldStart = try ColdStartBenchmark(parsing: &arguments)
            return
        }
        if kind == "connection" {
            connection = try ConnectionBenchmark(parsing: &arguments)
            return
        }
        if kind == "namespaces" {
            namespaces = try NamespacesBenchmark(parsing: &arguments)
            return
        }
        if kind == "cluster" {
            cluster = try ClusterBenchmark(parsing: &arguments)
            return
        }
        while let option = try arguments.nextOption() {
            switch option {
            case "--writes": writes = try arguments.int(for: option, in: 16...10_000_000)
            case "--clients": clients = try arguments.int(for: option, in: 1...1024)
            case "--iterations": iterations = try arguments.int(for: option, in: 1...100_000_000)
            case "--tls" where kind == "write": writeTLS = true
            case "--compare-tls" where kind == "write": compareTLS = true
            case "--rounds" where kind == "write": rounds = try arguments.int(for: option, in: 1...20)
            case "--compare-redis" where kind == "write": compareRedisOnly = true
            case "--no-redis" where kind == "write": skipRedis = true
            case "--sync":
                let mode = try arguments.value(for: option)
                guard mode == "full" || mode == "normal" else {
                    throw .invalidValue(option, mode, expected: "full or normal")
                }
                synchronousFull = mode == "full"
            default:
                guard kind == "write", try tlsOptions.parse(option, &arguments) else {
                    throw .unknownOption(option, command: Self.name)
                }
            }
        }
        try tlsOptions.validate()
        if tlsOptions.givesFiles && !compareTLS { writeTLS = true }
        if writeTLS && compareTLS { throw UsageError(message: "give --tls or --compare-tls, not both") }
        if compareRedisOnly && (writeTLS || compareTLS) {
            throw UsageError(message: "--compare-redis runs in plaintext: give it without --tls or --compare-tls")
        }
    }

    func run() throws {
        #if DEBUG
            print("WARNING: debug build — run `swift build -c release` and use .build/release/canopy for real figures")
        #endif
        switch kind {
        case "write":
            if compareTLS {
                try compareWritesOverTLS()
            } else if compareRedisOnly {
                try compareDurableWritesWithRedis()
            } else {
                try writeBenchmark()
            }
        case "fanout": try fanout?.run()
        case "publish": try publish?.run()
        case "isolation": try isolation?.run()
        case "coldstart": try coldStart?.run()
        case "namespaces": try namespaces?.run()
        case "soak": try soak?.run()
        case "connection": try connection?.run()
        case "cluster": try cluster?.run()
        default: try RulesBenchmark(iterations: iterations).run()
        }
    }

    // MARK: - write

    private func writeBenchmark() throws {
        let data = NSTemporaryDirectory() + "canopy-bench-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: data) }
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.dataDirectory = data
        configuration.synchronousFull = synchronousFull
        let certificate = writeTLS ? try tlsOptions.materialize() : nil
        defer { certificate?.remove() }
        let tls = try certificate?.clientContext()
        if let certificate {
            configuration.tls = .init(certificateFile: certificate.certificateFile, keyFile: certificate.keyFile)
        }
        LogSettings.level = .warning
        let daemon = try Daemon(configuration: configuration)
        try daemon.start()
        let done = DispatchSemaphore(value: 0)
        Thread { [daemon] in
            daemon.run()
            done.signal()
        }.start()
        defer {
            daemon.stop()
            _ = done.wait(timeout: .now() + 30)
        }
        let port = daemon.port
        let auth = [("Authorization", "Bearer \(daemon.credentials.adminSecret)")]
        let payload = Array(#"{"title":"hello","order":3,"seen":false}"#.utf8)
        print(
            "machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; sync=\(synchronousFull ? "full" : "normal")"
                + (tls == nil ? "" : "; over TLS (HTTPS keep-alive)"))

        var results: [(String, Measurement)] = []
        for (label, preload) in [("small db (1k nodes)", 1_000), ("large db (200k nodes)", 200_000)] {
            let ns = "bench\(preload)"
            try preloadNamespace(port: port, auth: auth, ns: ns, nodes: preload, tls: tls)
            let seq = try measure(clients: 1, total: writes, port: port, tls: tls) { client, i in
                try client.request("PUT", "/items/s\(i).json?ns=\(ns)&print=silent", headers: auth, body: payload)
            }
            results.append(("canopy put, 1 client, \(label)", seq))
            let conc = try measure(clients: clients, total: writes, port: port, tls: tls) { client, i in
                try client.request("PUT", "/items/c\(i).json?ns=\(ns)&print=silent", headers: auth, body: payload)
            }
            results.append(("canopy put, \(clients) clients, \(label)", conc))
            let reads = try measure(clients: 1, total: writes, port: port, tls: tls) { client, i in
                try client.request("GET", "/items/s\(i % writes).json?ns=\(ns)", headers: auth)
            }
            results.append(("canopy get, 1 client, \(label)", reads))
        }

        let baselinePath = data + "/baseline.sqlite"
        let baseline = try SQLiteBaseline(
            path: baselinePath, options: StoreOptions(synchronous: synchronousFull ? .full : .normal))
        let value = String(decoding: payload, as: UTF8.self)
        let rawSeq = try measureLocal(threads: 1, total: writes) { i in try baseline.upsert(key: "s\(i)", value: value)
        }
        let rawConc = try measureLocal(threads: clients, total: writes) { i in
            try baseline.upsert(key: "c\(i)", value: value)
        }
        results.append(("sqlite upsert+commit, 1 thread", rawSeq))
        results.append(("sqlite upsert+commit, \(clients) threads (one connection)", rawConc))

        print("benchmark".padding(toLength: 58, withPad: " ", startingAt: 0) + "     ops/s    p50 ms    p99 ms")
        for (name, m) in results {
            print(
                name.padding(toLength: 58, withPad: " ", startingAt: 0)
                    + String(format: "%10.0f %9.3f %9.3f", m.opsPerSecond, m.p50, m.p99))
        }
        let canopySeq = results[0].1.opsPerSecond
        let canopyConc = results[1].1.opsPerSecond
        print(String(format: "ratio canopy/sqlite, sequential: %.2f", canopySeq / rawSeq.opsPerSecond))
        print(String(format: "ratio canopy/sqlite, %d concurrent: %.2f", clients, canopyConc / rawConc.opsPerSecond))
        print(
            String(
                format: "ratio large/small db, sequential put p50: %.2f, get p50: %.2f",
                results[3].1.p50 / results[0].1.p50,
                results[5].1.p50 / results[2].1.p50))
        print("")
        if tls == nil {
            try compareDurableWritesWithRedis()
        } else {
            print("durable-write rows against redis skipped over TLS (run them with --compare-redis, in plaintext)")
        }
    }

    func preloadNamespace(port: Int, auth: [(String, String)], ns: String, nodes: Int, tls: TLSClientContext?) throws {
        let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 120, tls: tls)
        let perBatch = 10_000
        var written = 0
        var batch = 0
        while written < nodes {
            let count = min(perBatch, nodes - written)
            var body = "{"
            for i in 0..<count {
                if i > 0 { body += "," }
                body += #""k\#(written + i)":{"v":\#(written + i)}"#
            }
            body += "}"
            let r = try client.request(
                "PUT", "/bulk/b\(batch).json?ns=\(ns)&print=silent", headers: auth, body: Array(body.utf8))
            guard r.status == 204 else { throw CommandFailure("preload failed with status \(r.status)") }
            written += count
            batch += 1
        }
    }

    struct Measurement {
        var opsPerSecond: Double
        var p50: Double
        var p99: Double
        /// Wall time of the measured operations.
        var seconds: Double = 0
        /// CPU time of this process (every thread) while the clock ran.
        var clientCPUSeconds: Double = 0
        /// CPU time of the daemon while the clock ran, when `measure` was given a way to read it.
        var serverCPUSeconds: Double?
    }

    /// Runs `op` on `clients` keep-alive connections (connected, over TLS when `tls` is given, before the clock starts).
    func measure(
        clients: Int, total: Int, port: Int, tls: TLSClientContext?, serverCPU: (() -> Double?)? = nil,
        _ op: @escaping @Sendable (HTTPClient, Int) throws -> HTTPClientResponse
    ) throws -> Measurement {
        let setUp: @Sendable () -> HTTPClient = {
            let client = HTTPClient(host: "127.0.0.1", port: port, tls: tls)
            _ = try? client.request("GET", "/.canopy/health")
            return client
        }
        return try measureLocal(threads: clients, total: total, serverCPU: serverCPU, setUp: setUp) { client, i in
            let r = try op(client, i)
            guard r.status < 300 else { throw CommandFailure("request failed with status \(r.status)") }
        }
    }

    private func measureLocal(threads: Int, total: Int, _ op: @escaping @Sendable (Int) throws -> Void) throws
        -> Measurement
    {
        try measureLocal(threads: threads, total: total, setUp: { () }) { _, i in try op(i) }
    }

    /// Runs `total` operations split over `threads` threads; records each operation's latency. The clock starts
    /// once every thread has run `setUp`.
    private func measureLocal<State>(
        threads: Int, total: Int, serverCPU: (() -> Double?)? = nil, setUp: @escaping @Sendable () -> State,
        _ op: @escaping @Sendable (State, Int) throws -> Void
    ) throws -> Measurement {
        let latencies = Mutex<[Double]>([])
        let failure = Mutex<String?>(nil)
        let group = DispatchGroup()
        let settingUp = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        for t in 0..<threads {
            group.enter()
            settingUp.enter()
            Thread {
                defer { group.leave() }
                let state = setUp()
                settingUp.leave()
                go.wait()
                var local: [Double] = []
                var i = t
                while i < total {
                    let t0 = monotonicNanoseconds()
                    do {
                        try op(state, i)
                    } catch {
                        failure.withLock { $0 = "\(error)" }
                        return
                    }
                    local.append(Double(monotonicNanoseconds() - t0) / 1e6)
                    i += threads
                }
                latencies.withLock { $0 += local }
            }.start()
        }
        settingUp.wait()
        let start = monotonicNanoseconds()
        let clientBefore = FanoutChild.ownCPUSeconds()
        let serverBefore = serverCPU?()
        for _ in 0..<threads { go.signal() }
        group.wait()
        let clientCPU = FanoutChild.ownCPUSeconds() - clientBefore
        let serverAfter = serverCPU?()
        if let message = failure.withLock({ $0 }) { throw CommandFailure("benchmark failed: \(message)") }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        let sorted = latencies.withLock { $0 }.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        var serverSeconds: Double?
        if let serverBefore, let serverAfter { serverSeconds = serverAfter - serverBefore }
        return Measurement(
            opsPerSecond: Double(sorted.count) / elapsed, p50: percentile(0.5), p99: percentile(0.99), seconds: elapsed,
            clientCPUSeconds: clientCPU, serverCPUSeconds: serverSeconds)
    }
}
