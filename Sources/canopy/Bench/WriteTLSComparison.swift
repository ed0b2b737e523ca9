// WriteTLSComparison -- `canopy bench write --compare-tls`: keep-alive REST PUTs over HTTPS against plaintext.
//
// Per round, a `canopy serve` child in plaintext and one over TLS (a throw-away certificate, or the files given),
// which goes first alternating from round to round; on each, PUTs of a small object at 1, --clients and 50
// connections, every connection made (and its TLS handshake done) before the clock starts. CPU is counted while the
// clock runs: the daemon's from /proc (in clock ticks: give --writes in thousands), the client's (this process,
// every connection's thread) from getrusage. The table shows each side's
// median round; the ratios are the medians of the rounds' TLS/plaintext ratios.

import CanopyNet
import Foundation

extension BenchCommand {
    /// One measurement: throughput and latency, and the CPU spent per write by the daemon and by the client.
    private struct WriteRound {
        var measurement: Measurement
        var serverMicrosecondsPerWrite: Double?
        var clientMicrosecondsPerWrite: Double
        /// The client's CPU time over wall time: 1.0 is one core kept busy.
        var clientCores: Double
    }

    /// The connection counts compared: 1, `--clients` and 50.
    var comparedClientCounts: [Int] { Array(Set([1, clients, 50])).sorted() }

    func compareWritesOverTLS() throws {
        let certificate = try tlsOptions.materialize()
        defer { certificate.remove() }
        let tls = try certificate.clientContext()
        let counts = comparedClientCounts
        let payload = Array(#"{"title":"hello","order":3,"seen":false}"#.utf8)
        print(
            "machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; sync=\(synchronousFull ? "full" : "normal"); "
                + "\(writes) keep-alive PUTs per measurement; \(rounds) round(s) of a plaintext and a TLS daemon "
                + "(child processes, fresh per round)")
        var plain: [Int: [WriteRound]] = [:]
        var secure: [Int: [WriteRound]] = [:]
        for round in 0..<rounds {
            for overTLS in round % 2 == 0 ? [false, true] : [true, false] {
                let results = try writeRound(
                    certificate: overTLS ? certificate : nil, clientTLS: overTLS ? tls : nil, counts: counts,
                    payload: payload)
                for (count, result) in results {
                    if overTLS { secure[count, default: []].append(result) } else { plain[count, default: []].append(result) }
                }
            }
        }
        print(
            "benchmark".padding(toLength: 34, withPad: " ", startingAt: 0)
                + "     ops/s    p50 ms    p99 ms  CPU us/write srv+cli  cli cores")
        func median(_ runs: [WriteRound]) -> WriteRound {
            runs.sorted { $0.measurement.opsPerSecond < $1.measurement.opsPerSecond }[runs.count / 2]
        }
        func line(_ label: String, _ run: WriteRound) {
            let server = run.serverMicrosecondsPerWrite.map { String(format: "%8.1f", $0) } ?? "     n/a"
            print(
                label.padding(toLength: 34, withPad: " ", startingAt: 0)
                    + String(format: "%10.0f %9.3f %9.3f  ", run.measurement.opsPerSecond, run.measurement.p50,
                        run.measurement.p99)
                    + server + " + " + String(format: "%-8.1f %9.2f", run.clientMicrosecondsPerWrite, run.clientCores))
        }
        for count in counts {
            let suffix = count == 1 ? "" : "s"
            line("canopy put, plaintext, \(count) conn\(suffix)", median(plain[count] ?? []))
            line("canopy put, tls, \(count) conn\(suffix)", median(secure[count] ?? []))
        }
        func medianValue(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        func each(_ values: [Double]) -> String { values.map { String(format: "%.2f", $0) }.joined(separator: " ") }
        for count in counts {
            let pairs = Array(zip(plain[count] ?? [], secure[count] ?? []))
            let throughput = pairs.map { $0.1.measurement.opsPerSecond / $0.0.measurement.opsPerSecond }
            let cpu = pairs.compactMap { pair -> Double? in
                guard let p = pair.0.serverMicrosecondsPerWrite, let t = pair.1.serverMicrosecondsPerWrite, p > 0 else {
                    return nil
                }
                return t / p
            }
            var text = "ratio tls/plaintext, \(count) conn: writes/s " + String(format: "%.2f", medianValue(throughput))
                + " (rounds: \(each(throughput)))"
            if !cpu.isEmpty {
                text += "; server CPU per write " + String(format: "%.2f", medianValue(cpu)) + " (rounds: \(each(cpu)))"
            }
            print(text)
        }
        for (label, runs) in [("plaintext", plain), ("tls", secure)] {
            for count in counts {
                let cores = median(runs[count] ?? []).clientCores
                guard cores >= 0.9 else { continue }
                print(
                    "note: the benchmark client kept \(String(format: "%.2f", cores)) cores busy at \(count) \(label) "
                        + "connections: it saturates a core, so the client shares the bound on this figure")
            }
        }
    }

    /// Starts a daemon (over TLS with `certificate`), measures PUTs at each connection count, stops it.
    private func writeRound(
        certificate: BenchCertificate?, clientTLS: TLSClientContext?, counts: [Int], payload: [UInt8]
    ) throws -> [(Int, WriteRound)] {
        let (daemon, credential) = try FanoutChild.startDaemon(
            sync: synchronousFull ? "full" : "normal", maxConnections: (counts.max() ?? 1) + 64, tls: certificate)
        defer { daemon.stop() }
        let auth = [("Authorization", "Bearer \(credential)")]
        let ns = "benchtls"
        try preloadNamespace(port: daemon.port, auth: auth, ns: ns, nodes: 1_000, tls: clientTLS)
        var results: [(Int, WriteRound)] = []
        for count in counts {
            let measurement = try measure(
                clients: count, total: writes, port: daemon.port, tls: clientTLS, serverCPU: { daemon.cpuSeconds }
            ) { client, i in
                try client.request(
                    "PUT", "/items/c\(count)-\(i).json?ns=\(ns)&print=silent", headers: auth, body: payload)
            }
            let client = measurement.clientCPUSeconds
            let done = Double(writes)
            let server = measurement.serverCPUSeconds.map { $0 * 1e6 / done }
            results.append(
                (
                    count,
                    WriteRound(
                        measurement: measurement, serverMicrosecondsPerWrite: server,
                        clientMicrosecondsPerWrite: client * 1e6 / done,
                        clientCores: measurement.seconds > 0 ? client / measurement.seconds : 0)
                ))
        }
        return results
    }
}
