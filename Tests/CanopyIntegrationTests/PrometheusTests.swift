// PrometheusTests -- a real Prometheus (Debian's `prometheus`) on loopback scrapes a real `canopy serve`, through
// `--metrics-port` and through the main port with the admin credential, and a counter is queried back.

import CanopyCore
import CanopyNet
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP port on 127.0.0.1 that was free a moment ago (for programs that cannot report a kernel-chosen port),
/// below the ephemeral range so that no outgoing connection takes it before the program binds it.
func freeLoopbackPort() throws -> Int { try Socket.freeLoopbackPortBelowEphemeralRange() }

@Suite struct PrometheusTests {
    @Test(.timeLimit(.minutes(2))) func prometheusScrapesAndQueriesACounterBack() throws {
        guard let prometheus = executablePath("prometheus") else {
            Issue.record("prometheus is not installed (Debian package 'prometheus'; Tests/run.sh installs it)")
            return
        }
        let data = makeTemporaryDirectory()
        let work = makeTemporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: data)
            try? FileManager.default.removeItem(atPath: work)
        }
        let server = try ServerProcess(dataDirectory: data, extraArguments: ["--metrics-port", "0"])
        defer { server.terminate() }
        #expect(server.metricsPort > 0)
        let client = HTTPClient(host: "127.0.0.1", port: server.port)
        for index in 0..<4 {
            let put = try client.json(
                "PUT", "/items/\(index).json", "\(index)", headers: [("Authorization", "Bearer \(server.admin)")])
            #expect(put.status == 200)
        }
        // The metrics port needs no credential; the main port refuses a scrape without one.
        let open = HTTPClient(host: "127.0.0.1", port: server.metricsPort)
        let direct = try open.request("GET", "/.canopy/metrics")
        #expect(direct.status == 200)
        #expect(metricSample(direct.text, #"canopy_writes_total{outcome="ok"}"#) == 4)
        #expect(try open.request("GET", "/items.json").status == 404)  // no data on this port

        let port = try freeLoopbackPort()
        let config = """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: canopy
                metrics_path: /.canopy/metrics
                static_configs:
                  - targets: ['127.0.0.1:\(server.metricsPort)']
              - job_name: canopy-admin
                metrics_path: /.canopy/metrics
                authorization:
                  type: Bearer
                  credentials_file: \(data)/admin.credential
                static_configs:
                  - targets: ['127.0.0.1:\(server.port)']

            """
        try config.write(toFile: work + "/prometheus.yml", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: prometheus)
        process.arguments = [
            "--config.file=\(work)/prometheus.yml", "--storage.tsdb.path=\(work)/tsdb",
            "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
        ]
        process.standardOutput = FileHandle.nullDevice
        _ = FileManager.default.createFile(atPath: work + "/prometheus.log", contents: nil)
        process.standardError = FileHandle(forWritingAtPath: work + "/prometheus.log")
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        // The counter, as both jobs scraped it.
        var values: [String: String] = [:]
        let deadline = Date().addingTimeInterval(60)
        while values.count < 2 && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.5)
            let query = "canopy_writes_total%7Boutcome%3D%22ok%22%7D"
            guard
                let answer = try? HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 5)
                    .json("GET", "/api/v1/query?query=\(query)"), answer.status == 200,
                case .array(let results)? = answer.json?["data"]?["result"]
            else { continue }
            for result in results {
                if let job = result["metric"]?["job"]?.stringValue, let value = result["value"]?[1]?.stringValue {
                    values[job] = value
                }
            }
        }
        let log = (try? String(contentsOfFile: work + "/prometheus.log", encoding: .utf8)) ?? ""
        #expect(values["canopy"] == "4", "prometheus log: \(log)")
        #expect(values["canopy-admin"] == "4", "prometheus log: \(log)")
    }
}
