// MetricsExposition -- the daemon's figures in the Prometheus text exposition format, version 0.0.4.
//
// Format (prometheus.io "Exposition formats"): UTF-8 lines; per metric family one `# HELP name text` and one
// `# TYPE name counter|gauge|histogram` line, then its samples `name{label="value",...} number`, every sample of
// a family together. Counters end in `_total`. A histogram `x` has cumulative `x_bucket{le="<bound>"}` samples in
// ascending order ending with `le="+Inf"` (equal to `x_count`), then `x_sum` and `x_count`. Label values escape
// `\`, `"` and line feeds; HELP text escapes `\` and line feeds. Durations are in seconds, sizes in bytes.
//
// Rendered on the loop at scrape time from the loop's plain counters (ServerMetrics), the servers' and the realtime
// hub's state, the store threads' histograms, and /proc/self for the process figures.

import CanopyCore
import CanopyNet
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Writes the exposition text.
struct MetricsExposition {
    private(set) var text = ""

    /// Everything the daemon exports, as one scrape's text.
    static func render(_ context: ServerContext) -> String {
        var out = MetricsExposition()
        let metrics = context.registry.metrics
        let server = context.server
        let gauges = (context.realtime as? RealtimeHub)?.gauges ?? RealtimeHub.Gauges()
        let total = server?.connectionCount ?? 0
        let webSockets = server?.webSocketCount ?? 0

        out.family("canopy_connections", .gauge, "Open client connections by transport (long_poll counts sessions).")
        out.sample("canopy_connections", ["transport": "http"], max(0, total - webSockets - gauges.eventStreams))
        out.sample("canopy_connections", ["transport": "sse"], gauges.eventStreams)
        out.sample("canopy_connections", ["transport": "websocket"], webSockets)
        out.sample("canopy_connections", ["transport": "long_poll"], gauges.longPollSessions)
        out.counter("canopy_connections_accepted_total", "Connections accepted.", server?.connectionsAccepted ?? 0)
        out.counter(
            "canopy_connections_refused_total", "Connections refused with 503 over --max-connections.",
            server?.connectionsRefused ?? 0)

        out.family("canopy_listens", .gauge, "Active listens by transport (wire: WebSocket and long polling).")
        out.sample("canopy_listens", ["transport": "wire"], gauges.wireListens)
        out.sample("canopy_listens", ["transport": "sse"], gauges.eventStreams)
        if let proxy = context.proxy {
            out.counter(
                "canopy_cluster_owner_connections_opened_total",
                "Connections opened to owners, to proxy REST requests and forward replicas' writes (pooled: a reused "
                    + "connection opens none).", proxy.pool.openedCount)
        }
        out.gauge("canopy_namespaces_open", "Namespaces held open.", context.registry.openNamespaces.count)
        out.counter(
            "canopy_namespace_loads_total", "Namespace trees loaded from their files (first use, or after closing).",
            metrics.namespaceLoads)
        out.gauge("canopy_draining", "1 while the daemon drains after SIGTERM, else 0.", context.isDraining ? 1 : 0)

        out.labelled(
            "canopy_writes_total", "Writes answered, by outcome (ok or the error code).", label: "outcome",
            metrics.writesByOutcome, always: ["ok"])
        out.histogram(
            "canopy_commit_duration_seconds", "Store transactions (a group commit), mutations and COMMIT.",
            metrics.commitLatency)
        out.histogram(
            "canopy_fsync_duration_seconds", "fdatasync of a namespace's WAL (--sync full).", metrics.syncLatency)

        out.counter("canopy_sent_bytes_total", "Bytes written to client sockets.", server?.bytesSent ?? 0)
        out.family("canopy_messages_sent_total", .counter, "Messages sent to clients, by transport.")
        out.sample("canopy_messages_sent_total", ["transport": "websocket"], metrics.wireMessagesSent)
        out.sample("canopy_messages_sent_total", ["transport": "long_poll"], metrics.longPollMessagesSent)
        out.sample("canopy_messages_sent_total", ["transport": "sse"], metrics.sseMessagesSent)
        out.counter(
            "canopy_push_serializations_total",
            "Changes serialized for subscribers: once per listened location, change and transport.",
            metrics.pushSerializations)
        out.counter(
            "canopy_early_reads_total", "REST reads answered from a namespace's file while its tree was loading.",
            metrics.earlyReads)
        out.counter(
            "canopy_slow_consumers_dropped_total", "Streams and sockets closed over --max-output-backlog.",
            server?.slowConsumersDisconnected ?? 0)
        out.labelled(
            "canopy_rule_denials_total", "Requests the security rules refused, by operation.", label: "operation",
            metrics.ruleDenials, always: ["read", "write", "admin"])
        out.labelled(
            "canopy_publishes_total", "Publish-engine actions (publish, unpublish, revert, rollback), by outcome.",
            label: "outcome", metrics.publishesByOutcome, always: ["ok"])
        out.histogram(
            "canopy_publish_duration_seconds", "Publish-engine actions, from request to durable answer.",
            metrics.publishDuration)

        let process = ProcessFigures.current()
        out.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", process.residentBytes)
        out.gauge("process_open_fds", "Open file descriptors.", process.openDescriptors)
        out.gauge("process_max_fds", "The soft limit on open file descriptors.", process.maxDescriptors)
        out.gauge("process_threads", "Threads of the process.", process.threads)
        out.family("process_cpu_seconds_total", .counter, "User and system CPU time spent, in seconds.")
        out.line("process_cpu_seconds_total \(Self.number(process.cpuSeconds))")
        return out.text
    }

    enum Kind: String {
        case counter, gauge, histogram
    }

    mutating func family(_ name: String, _ kind: Kind, _ help: String) {
        let escaped = help.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
        line("# HELP \(name) \(escaped)")
        line("# TYPE \(name) \(kind.rawValue)")
    }

    mutating func sample(_ name: String, _ labels: [String: String], _ value: Int) {
        line(name + Self.labels(labels.sorted { $0.key < $1.key }) + " \(value)")
    }

    mutating func counter(_ name: String, _ help: String, _ value: Int) {
        family(name, .counter, help)
        line("\(name) \(value)")
    }

    mutating func gauge(_ name: String, _ help: String, _ value: Int) {
        family(name, .gauge, help)
        line("\(name) \(value)")
    }

    /// A counter family with one label; the `always` values appear (as 0) before they first happen.
    mutating func labelled(_ name: String, _ help: String, label: String, _ counts: [String: Int], always: [String]) {
        family(name, .counter, help)
        var all = counts
        for value in always where all[value] == nil { all[value] = 0 }
        for (value, count) in all.sorted(by: { $0.key < $1.key }) { sample(name, [label: value], count) }
    }

    mutating func histogram(_ name: String, _ help: String, _ histogram: LatencyHistogram) {
        family(name, .histogram, help)
        let state = histogram.snapshot
        var cumulative: UInt64 = 0
        for (index, bound) in histogram.bounds.enumerated() {
            cumulative += state.counts[index]
            line("\(name)_bucket{le=\"\(Self.number(bound))\"} \(cumulative)")
        }
        line("\(name)_bucket{le=\"+Inf\"} \(state.count)")
        line("\(name)_sum \(Self.number(state.sum))")
        line("\(name)_count \(state.count)")
    }

    mutating func line(_ text: String) {
        self.text += text
        self.text += "\n"
    }

    private static func labels(_ pairs: [(key: String, value: String)]) -> String {
        guard !pairs.isEmpty else { return "" }
        let inner = pairs.map { pair in
            let value = pair.value.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
            return "\(pair.key)=\"\(value)\""
        }
        return "{" + inner.joined(separator: ",") + "}"
    }

    /// A float as Go's ParseFloat reads it (Swift's shortest round-trip form: `0.0001`, `2.5`, `1e-05`).
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

/// The process figures Prometheus client libraries export under `process_*`, read from /proc/self.
struct ProcessFigures {
    var residentBytes = 0
    var openDescriptors = 0
    var maxDescriptors = 0
    var threads = 0
    var cpuSeconds = 0.0

    static func current() -> ProcessFigures {
        var figures = ProcessFigures()
        // statm: size resident shared text lib data dt, in pages.
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let fields = statm.split(separator: " ")
            if fields.count > 1, let pages = Int(fields[1]) {
                figures.residentBytes = pages * Int(sysconf(Int32(_SC_PAGESIZE)))
            }
        }
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
                figures.threads = Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        // Minus the descriptor the listing itself holds open.
        if let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            figures.openDescriptors = max(0, names.count - 1)
        }
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            figures.maxDescriptors = Int(clamping: limit.rlim_cur)
        }
        var usage = rusage()
        if getrusage(RUSAGE_SELF.rawValue, &usage) == 0 {
            let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
            figures.cpuSeconds = user + system
        }
        return figures
    }
}
