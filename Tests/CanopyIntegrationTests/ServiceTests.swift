// ServiceTests -- running Canopy as a service: `CANOPY_*` environment variables, `--log-format json`, and the
// systemd unit of `canopy service`, checked by the real `systemd-analyze verify`.

import CanopyCore
import CanopyNet
import Foundation
import Testing

@Suite struct EnvironmentTests {
    /// Every serve option has a variable; a flag on the command line wins over its variable (even a bad one).
    @Test(.timeLimit(.minutes(1))) func environmentVariablesConfigureServeAndFlagsWin() throws {
        let data = makeTemporaryDirectory()
        let log = makeTemporaryDirectory() + "/serve.log"
        defer {
            try? FileManager.default.removeItem(atPath: data)
            try? FileManager.default.removeItem(atPath: (log as NSString).deletingLastPathComponent)
        }
        let server = try ServerProcess(
            dataDirectory: data, extraArguments: ["--port", "0"], logFile: log,
            environment: [
                "CANOPY_DATA": data, "CANOPY_PORT": "not a port", "CANOPY_DEFAULT_NS": "fromenv",
                "CANOPY_LOG_FORMAT": "json", "CANOPY_LOG_LEVEL": "info", "CANOPY_EMULATOR": "yes",
                "CANOPY_METRICS_PORT": "0",
            ],
            baseArguments: [])
        // --emulator from CANOPY_EMULATOR=yes: 'Bearer owner' is the admin.
        let client = HTTPClient(host: "127.0.0.1", port: server.port)
        let put = try client.json("PUT", "/a.json", "1", headers: [("Authorization", "Bearer owner")])
        #expect(put.status == 200)
        // The default namespace from CANOPY_DEFAULT_NS.
        #expect(FileManager.default.fileExists(atPath: data + "/fromenv.sqlite"))
        #expect(server.metricsPort > 0)
        server.terminate()
        // CANOPY_LOG_FORMAT=json: every line of the log is a JSON object with the event.
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            let json = try JSONValue.parse(Array(line.utf8))
            #expect(json["event"]?.stringValue != nil, "line: \(line)")
        }
        #expect(lines.contains { $0.contains(#""event":"server.listening""#) })
    }

    @Test(arguments: [
        ("CANOPY_PORT", "70000", "environment variable CANOPY_PORT: invalid value '70000' for '--port'"),
        ("CANOPY_SYNC", "sometimes", "environment variable CANOPY_SYNC: invalid value 'sometimes' for '--sync'"),
        ("CANOPY_EMULATOR", "maybe", "environment variable CANOPY_EMULATOR: invalid value 'maybe' for '--emulator'"),
        ("CANOPY_LOG_FORMAT", "xml", "environment variable CANOPY_LOG_FORMAT: invalid value 'xml'"),
    ])
    func aBadVariableIsRefusedByNameAndChangesNothing(variable: String, value: String, message: String) throws {
        let data = makeTemporaryDirectory() + "/never-created"
        defer { try? FileManager.default.removeItem(atPath: (data as NSString).deletingLastPathComponent) }
        let r = try runCanopy(["serve", "--data", data], environment: [variable: value])
        #expect(r.status == 64)
        #expect(r.stderr.hasPrefix("canopy: error: " + message), "stderr: \(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: data))
    }

    @Test func helpNamesTheVariablesAndTheNewOptions() throws {
        let r = try runCanopy(["serve", "--help"])
        #expect(r.status == 0)
        for text in ["CANOPY_MAX_CONNECTIONS", "--metrics-port", "--drain-timeout", "--log-format"] {
            #expect(r.stdout.contains(text), "missing \(text)")
        }
    }
}

@Suite struct ServiceUnitTests {
    @Test func theUnitIsHardened() throws {
        let r = try runCanopy(["service", "--user", "canopy", "--data", "/var/lib/canopy/", "--port", "9000"])
        #expect(r.status == 0, "stderr: \(r.stderr)")
        let lines = Set(r.stdout.split(separator: "\n").map(String.init))
        for line in [
            "User=canopy", "NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/lib/canopy",
            "LimitNOFILE=65536", "Restart=on-failure", "KillSignal=SIGTERM", "TimeoutStopSec=25s",
            "CapabilityBoundingSet=",
        ] {
            #expect(lines.contains(line), "missing \(line)")
        }
        #expect(r.stdout.contains(" serve --data /var/lib/canopy --port 9000\n"))
        // A port below 1024 gets exactly the capability to bind it.
        let low = try runCanopy(["service", "--user", "canopy", "--data", "/srv/c d", "--port", "80"])
        #expect(low.stdout.contains("\nCapabilityBoundingSet=CAP_NET_BIND_SERVICE\n"))
        #expect(low.stdout.contains("\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n"))
        #expect(low.stdout.contains(#" serve --data "/srv/c d" --port 80"#))
        let big = try runCanopy(["service", "--user", "c", "--data", "/d", "--max-connections", "200000"])
        #expect(big.stdout.contains("\nLimitNOFILE=205024\n"))
    }

    @Test(arguments: [
        (["service", "--data", "/var/lib/canopy"], "missing required option '--user'"),
        (["service", "--user", "canopy"], "missing required option '--data'"),
        (["service", "--user", "canopy", "--data", "relative/dir"], "expected an absolute path"),
        (["service", "--user", "bad user", "--data", "/d"], "invalid value 'bad user' for '--user'"),
        (["service", "--user", "canopy", "--data", "/d", "--port", "abc"], "invalid value 'abc' for '--port'"),
        (["service", "--user", "canopy", "--data", "/d", "--bogus"], "unknown option '--bogus'"),
        (["service", "--user", "canopy", "--data", "/d", "--rules", "rules.json"], "expected an absolute path"),
    ])
    func badInputIsAUsageError(arguments: [String], message: String) throws {
        let r = try runCanopy(arguments)
        #expect(r.status == 64)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains(message), "stderr: \(r.stderr)")
    }

    /// systemd's own checker loads the unit offline: every directive must parse (a warning fails the test) and
    /// the command must be an executable file.
    @Test func systemdAnalyzeVerifyAcceptsTheUnit() throws {
        guard let analyze = executablePath("systemd-analyze") else {
            Issue.record("systemd-analyze is not installed (Debian package 'systemd'; Tests/run.sh installs it)")
            return
        }
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for extra in [["--port", "9000", "--metrics-port", "9100"], ["--port", "443", "--drain-timeout", "30"]] {
            let r = try runCanopy(
                ["service", "--user", "canopy", "--data", "/var/lib/canopy", "--binary", canopyBinaryPath()] + extra)
            #expect(r.status == 0)
            let unit = directory + "/canopy.service"
            try r.stdout.write(toFile: unit, atomically: true, encoding: .utf8)
            let verify = try runProgram(analyze, ["verify", unit])
            #expect(verify.status == 0, "systemd-analyze: \(verify.stderr)")
            #expect(verify.stderr.isEmpty, "systemd-analyze: \(verify.stderr)")
        }
        // The checker can fail: a misspelt value is reported.
        let broken = directory + "/broken.service"
        let r = try runCanopy([
            "service", "--user", "canopy", "--data", "/var/lib/canopy", "--binary", canopyBinaryPath(),
        ])
        try r.stdout.replacingOccurrences(of: "NoNewPrivileges=yes", with: "NoNewPrivileges=perhaps")
            .write(toFile: broken, atomically: true, encoding: .utf8)
        #expect(try !runProgram(analyze, ["verify", broken]).stderr.isEmpty)
    }
}
