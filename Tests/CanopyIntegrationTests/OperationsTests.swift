// OperationsTests -- /.canopy/health, /.canopy/ready and /.canopy/metrics against a real daemon.

import CanopyCore
import CanopyNet
import Foundation
import Testing

/// The value of the sample `series` (name and labels exactly as exported) in exposition text, if present.
func metricSample(_ text: String, _ series: String) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Double(line.dropFirst(series.count + 1))
    }
    return nil
}

/// The path of an executable on PATH (or in /usr/bin, /usr/sbin, /bin), nil when absent.
func executablePath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    for directory in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin", "/bin"] {
        let candidate = directory + "/" + name
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// Runs a program to its end; exit status and both outputs.
func runProgram(_ path: String, _ arguments: [String], input: String? = nil) throws -> (
    status: Int32, stdout: String, stderr: String
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    let stdin = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try stdin.fileHandleForWriting.close()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}

@Suite struct HealthTests {
    @Test func healthAndReadyAnswerWithoutCredentialsAndShowNoData() throws {
        try withServer { server in
            let client = server.client()
            let put = try client.json(
                "PUT", "/secret.json", #""do not show me""#, headers: [("Authorization", "Bearer \(server.admin)")])
            #expect(put.status == 200)
            let health = try client.request("GET", "/.canopy/health")
            #expect(health.status == 200)
            #expect(health.text == "ok\n")
            let ready = try client.request("GET", "/.canopy/ready")
            #expect(ready.status == 200)
            #expect(ready.text == "ready\n")
            #expect(!ready.text.contains("do not show me") && !health.text.contains("do not show me"))
            // Other methods are refused, and nothing is written.
            let post = try client.request("POST", "/.canopy/ready", body: Array("{}".utf8))
            #expect(post.status == 405)
            #expect(post.text.contains("use GET"))
        }
    }

    /// A data directory that refuses the probe's write: 503 with the reason; 200 again once it takes writes.
    @Test func readyIs503WhileTheDataDirectoryRefusesAWrite() throws {
        try withServer { server in
            let client = server.client()
            #expect(try client.request("GET", "/.canopy/ready").status == 200)
            // A directory where the probe file goes: its open for writing fails (EISDIR), as on a read-only mount
            // (the tests run as root, for whom permission bits do not refuse anything).
            let blocker = server.dataDirectory + "/.canopy-ready-probe"
            try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: false)
            let refused = try client.request("GET", "/.canopy/ready")
            #expect(refused.status == 503)
            #expect(refused.text.contains("not writable"))
            // Liveness is another question: the process still serves.
            #expect(try client.request("GET", "/.canopy/health").status == 200)
            try FileManager.default.removeItem(atPath: blocker)
            #expect(try client.request("GET", "/.canopy/ready").status == 200)
            #expect(!FileManager.default.fileExists(atPath: blocker))  // the probe cleans up after itself
        }
    }
}

@Suite struct MetricsTests {
    @Test func metricsNeedTheAdminCredentialOnTheMainPort() throws {
        try withServer { server in
            let client = server.client()
            let anonymous = try client.request("GET", "/.canopy/metrics")
            #expect(anonymous.status == 401)
            #expect(anonymous.text.contains("admin credential"))
            let wrong = try client.request("GET", "/.canopy/metrics", headers: [("Authorization", "Bearer nope")])
            #expect(wrong.status == 401)
            let admin = try client.request(
                "GET", "/.canopy/metrics", headers: [("Authorization", "Bearer \(server.admin)")])
            #expect(admin.status == 200)
            #expect(admin.header("content-type") == "text/plain; version=0.0.4; charset=utf-8")
            #expect(admin.text.contains("# TYPE canopy_writes_total counter"))
        }
    }

    @Test(.timeLimit(.minutes(1))) func countersFollowWritesDenialsAndDeliveries() throws {
        try withServer { server in
            let client = server.client()
            let auth = [("Authorization", "Bearer \(server.admin)")]
            func scrape() throws -> String { try client.request("GET", "/.canopy/metrics", headers: auth).text }
            let before = try scrape()
            #expect(metricSample(before, #"canopy_writes_total{outcome="ok"}"#) == 0)
            #expect(metricSample(before, #"canopy_rule_denials_total{operation="write"}"#) == 0)
            // A wire listener, so the writes below are delivered.
            let listener = try WireTestClient(port: server.port, namespace: "metrics1")
            try WireProtocolTests().authAsAdmin(listener, server)
            let q = listener.request("q", ["p": "/rooms", "h": ""])
            #expect(listener.reply(q)?["d"]?["b"]?["s"] == "ok")
            for index in 0..<3 {
                #expect(try client.json("PUT", "/rooms/r\(index).json?ns=metrics1", "1", headers: auth).status == 200)
            }
            #expect(listener.push("d", path: "/rooms/r2") != nil)
            #expect(try client.json("PUT", "/rooms/x.json?ns=metrics1", "1").status == 401)  // no credential
            #expect(try client.json("PUT", "/rooms/y.json?ns=metrics1", "{", headers: auth).status == 400)
            #expect(try client.json("GET", "/rooms.json?ns=metrics1").status == 401)
            let after = try scrape()
            #expect(metricSample(after, #"canopy_writes_total{outcome="ok"}"#) == 3)
            #expect(metricSample(after, #"canopy_rule_denials_total{operation="write"}"#) == 1)
            #expect(metricSample(after, #"canopy_rule_denials_total{operation="read"}"#) == 1)
            #expect(metricSample(after, #"canopy_connections{transport="websocket"}"#) == 1)
            #expect(metricSample(after, #"canopy_listens{transport="wire"}"#) == 1)
            #expect(metricSample(after, "canopy_namespaces_open") == 1)
            #expect((metricSample(after, #"canopy_messages_sent_total{transport="websocket"}"#) ?? 0) >= 5)
            // Three commits, each synced (the default --sync full), in the histograms.
            #expect((metricSample(after, "canopy_commit_duration_seconds_count") ?? 0) >= 1)
            #expect(
                metricSample(after, #"canopy_commit_duration_seconds_bucket{le="+Inf"}"#)
                    == metricSample(after, "canopy_commit_duration_seconds_count"))
            #expect((metricSample(after, "canopy_fsync_duration_seconds_count") ?? 0) >= 1)
            #expect(
                (metricSample(after, "canopy_sent_bytes_total") ?? 0)
                    > (metricSample(before, "canopy_sent_bytes_total") ?? 0))
            #expect((metricSample(after, "process_resident_memory_bytes") ?? 0) > 1_000_000)
            #expect((metricSample(after, "process_open_fds") ?? 0) > 3)
            #expect((metricSample(after, "process_threads") ?? 0) >= 2)
            listener.close()
        }
    }

    /// Publish-engine actions are counted by outcome and timed from request to durable answer.
    @Test(.timeLimit(.minutes(1))) func publishesAreCountedAndTimed() throws {
        try PublishTests().withDemo(isolateGroups: false) { server, client in
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let ns = PublishTests.ns
            #expect(try client.json("POST", "/.canopy/publish?ns=\(ns)", headers: admin).status == 200)
            #expect(try client.json("POST", "/.canopy/publish?ns=\(ns)", headers: admin + [("if-match", "stale")]).status == 412)
            #expect(try client.json("POST", "/.canopy/revert?ns=\(ns)").status == 401)
            let text = try client.request("GET", "/.canopy/metrics", headers: admin).text
            #expect(metricSample(text, #"canopy_publishes_total{outcome="ok"}"#) == 1)
            #expect(metricSample(text, #"canopy_publishes_total{outcome="condition_failed"}"#) == 1)
            #expect(metricSample(text, "canopy_publish_duration_seconds_count") == 2)
            #expect((metricSample(text, "canopy_publish_duration_seconds_sum") ?? 0) > 0)
            #expect(metricSample(text, #"canopy_rule_denials_total{operation="admin"}"#) == 1)
        }
    }

    /// Debian's promtool lints a real scrape: HELP and TYPE lines, `_total` counters, histogram series, units.
    @Test(.timeLimit(.minutes(1))) func promtoolAcceptsARealScrape() throws {
        guard let promtool = executablePath("promtool") else {
            Issue.record("promtool is not installed (Debian package 'prometheus'; Tests/run.sh installs it)")
            return
        }
        try withServer { server in
            let client = server.client()
            let auth = [("Authorization", "Bearer \(server.admin)")]
            #expect(try client.json("PUT", "/a.json", #"{"b": 1}"#, headers: auth).status == 200)
            #expect(try client.json("PUT", "/a.json", "1").status == 401)
            let text = try client.request("GET", "/.canopy/metrics", headers: auth).text
            let lint = try runProgram(promtool, ["check", "metrics"], input: text)
            #expect(lint.status == 0, "promtool: \(lint.stdout) \(lint.stderr)")
            #expect(lint.stderr.isEmpty && lint.stdout.isEmpty, "promtool: \(lint.stdout) \(lint.stderr)")
            // The check can fail: a counter without `_total` is refused.
            let bad = try runProgram(promtool, ["check", "metrics"], input: "# HELP x y\n# TYPE x counter\nx 1\n")
            #expect(bad.status != 0)
        }
    }
}
