// CLITests -- the built `canopy` binary's command-line contract (rules eval/check/lint, token mint, usage errors).

import CanopyCore
import CanopyNet
import Foundation
import Testing

/// Runs the built binary; returns exit status and standard output.
func runCanopy(_ arguments: [String], environment: [String: String] = [:]) throws -> (
    status: Int32, stdout: String, stderr: String
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: canopyBinaryPath())
    process.arguments = arguments
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
}

@Suite struct CLITests {
    @Test(arguments: [
        (["--expr", "auth.token.userId == $userId", "--auth", #"{"token":{"userId":"901"}}"#, "--vars", #"{"$userId":"901"}"#],
         #"{"valid":true,"error":null,"value":true}"#),
        (["--expr", "auth != null"], #"{"valid":true,"error":null,"value":false}"#),
        (["--expr", "root.child('a').val() == 1", "--data", #"{"a":{".value":1,".priority":3}}"#],
         #"{"valid":true,"error":null,"value":true}"#),
        (["--expr", "now == 42", "--now", "42"], #"{"valid":true,"error":null,"value":true}"#),
        (["--expr", "query.limitToFirst == 5", "--query", #"{"orderByChild":"x","limitToFirst":5}"#],
         #"{"valid":true,"error":null,"value":true}"#),
    ])
    func rulesEvalPrintsOneJSONLine(arguments: [String], expected: String) throws {
        let r = try runCanopy(["rules", "eval"] + arguments)
        #expect(r.status == 0)
        #expect(try JSONValue.parse(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == JSONValue.parse(expected))
    }

    @Test func rulesEvalReportsInvalidAndRuntimeErrors() throws {
        var r = try runCanopy(["rules", "eval", "--expr", "7"])
        var line = try JSONValue.parse(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(r.status == 0 && line["valid"] == false && line["value"] == .null)
        r = try runCanopy(["rules", "eval", "--expr", "auth.uid.contains('a')"])
        line = try JSONValue.parse(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(line["valid"] == true && line["value"] == .null && line["error"]?.stringValue != nil)
    }

    @Test func rulesCheckAndLint() throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "{}".write(toFile: dir + "/data.json", atomically: true, encoding: .utf8)
        let rules = rulesFile("personalized-content.rules.json")
        var r = try runCanopy([
            "rules", "check", "--rules", rules, "--data", dir + "/data.json", "--auth",
            #"{"uid":"901","token":{"userId":"901"}}"#, "--op", "read", "--path", "/private/adminable/users/901",
        ])
        var line = try JSONValue.parse(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(r.status == 0 && line["allowed"] == true)
        r = try runCanopy([
            "rules", "check", "--rules", rules, "--data", dir + "/data.json", "--auth",
            #"{"uid":"901","token":{"userId":"901"}}"#, "--op", "read", "--path", "/private/adminable/users/1027",
        ])
        line = try JSONValue.parse(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(r.status == 0 && line["allowed"] == false)
        try #"{"rules":{".read":"nope"}}"#.write(toFile: dir + "/bad.json", atomically: true, encoding: .utf8)
        r = try runCanopy(["rules", "lint", dir + "/bad.json"])
        #expect(r.status != 0 && r.stdout.contains("nope"))
        r = try runCanopy(["rules", "lint", rules])
        #expect(r.status == 0)
    }

    @Test func tokenMintFromTheDirectory() throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let seed = URL(fileURLWithPath: rulesFile("x")).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("seed/attendees.json").path
        let r = try runCanopy(["token", "mint", "--attendee", "100203", "--directory", seed, "--data", dir, "--ttl", "8h"])
        #expect(r.status == 0)
        let payload = try #require(r.stdout.split(separator: ".").dropFirst().first)
        let claims = try JSONValue.parse(try #require(Base64.decode(payload, url: true)))
        #expect(claims["userId"] == "100203")
        #expect(claims["tierId"] == "default")
        #expect(claims["groups"] == ["12": true, "13": true])
        #expect(claims["ns"] == "canopy-demo-summit")
        let ttl = (claims["exp"]?.int64Value ?? 0) - (claims["iat"]?.int64Value ?? 0)
        #expect(ttl == 8 * 3600)
    }

    /// A lifetime past the year 9999 (or past Int64: it trapped on `iat + ttl`) is refused with a message and
    /// exit 1, before the data directory is created.
    @Test(arguments: ["9223372036854775807", "300000000000", "106751991167d"])
    func tokenMintRefusesALifetimePastTheYear9999(ttl: String) throws {
        let parent = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let dir = parent + "/data"
        let r = try runCanopy(["token", "mint", "--uid", "u1", "--data", dir, "--ttl", ttl])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.hasPrefix("canopy: error: A token lifetime of "))
        #expect(r.stderr.contains("no later than 9999-12-31T23:59:59Z"))
        #expect(!FileManager.default.fileExists(atPath: dir))
    }

    /// A `--url` port outside 1...65535 is a message and exit 1 (it trapped converting the port to 16 bits).
    @Test func aURLWithAnOutOfRangePortIsAnError() throws {
        let r = try runCanopy(["export", "--ns", "x", "--url", "http://127.0.0.1:99999", "--token", "t"])
        #expect(r.status == 1)
        #expect(r.stderr == "canopy: error: bad port in http://127.0.0.1:99999\n")
    }

    @Test func usageErrorsExit64WithAMessage() throws {
        var r = try runCanopy(["serve", "--port", "nope"])
        #expect(r.status == 64 && r.stderr.contains("--port"))
        r = try runCanopy(["frobnicate"])
        #expect(r.status == 64 && r.stderr.contains("unknown command"))
        r = try runCanopy(["token", "mint", "--ttl", "8x"])
        #expect(r.status == 64)
        r = try runCanopy(["--help"])
        #expect(r.status == 0 && r.stdout.contains("serve"))
        // Replicas always, or by load: not both; a threshold is a number or `never`; either needs --cluster.
        let cluster = ["serve", "--cluster", "nats://127.0.0.1:4222", "--node", "n1", "--advertise", "http://127.0.0.1:9001"]
        r = try runCanopy(cluster + ["--replicate", "--replicate-above", "10"])
        #expect(r.status == 64 && r.stderr.contains("--replicate and --replicate-above exclude each other"), "\(r.stderr)")
        r = try runCanopy(cluster + ["--replicate-above", "many"])
        #expect(r.status == 64 && r.stderr.contains("or never, not 'many'"), "\(r.stderr)")
        r = try runCanopy(["serve", "--replicate-above", "never"])
        #expect(r.status == 64 && r.stderr.contains("need --cluster"), "\(r.stderr)")
    }

    @Test(.timeLimit(.minutes(1))) func serveHonoursMaxConnections() throws {
        let data = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try ServerProcess(dataDirectory: data, extraArguments: ["--max-connections", "2"])
        defer { server.terminate() }
        let first = HTTPClient(host: "127.0.0.1", port: server.port)
        let second = HTTPClient(host: "127.0.0.1", port: server.port)
        #expect(try first.request("OPTIONS", "/").status == 200)
        #expect(try second.request("OPTIONS", "/").status == 200)
        let third = HTTPClient(host: "127.0.0.1", port: server.port)
        #expect(try third.request("OPTIONS", "/").status == 503)
        first.close()
        // The slot frees once the daemon has seen the close; on a loaded machine that may take a while.
        var status = 0
        let deadline = Date().addingTimeInterval(10)
        while status != 200 && Date() < deadline {
            status = try HTTPClient(host: "127.0.0.1", port: server.port).request("OPTIONS", "/").status
            if status != 200 { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(status == 200)
    }
}

/// `canopy import --offline`: the daemon's own write pipeline on a directory no daemon serves.
@Suite struct OfflineImportTests {
    @Test func importsIntoAnIdleDirectoryAndRefusesOneInUse() throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/event.json"
        let document = #"{"canopy":"export","version":1,"data":{"a":{".value":1,".priority":2},"b":{"c":"x"}}}"#
        try document.write(toFile: file, atomically: true, encoding: .utf8)
        let data = dir + "/data"
        let imported = try runCanopy(["import", "--ns", "offline", file, "--offline", "--data", data])
        #expect(imported.status == 0, "\(imported.stderr)")

        let server = try ServerProcess(dataDirectory: data)
        let c = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 10)
        let read = try c.json(
            "GET", "/.json?ns=offline&format=export", headers: [("Authorization", "Bearer \(server.admin)")])
        #expect(read.json == ["a": [".value": 1, ".priority": 2], "b": ["c": "x"]])
        // While the daemon serves the directory, an offline import is refused and changes nothing.
        let refused = try runCanopy(["import", "--ns", "offline", file, "--offline", "--data", data])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("in use by a running daemon"))
        server.terminate()

        let broken = dir + "/broken.json"
        try #"{"canopy":"export","version":1,"data":{"a.b":1}}"#.write(toFile: broken, atomically: true, encoding: .utf8)
        let invalid = try runCanopy(["import", "--ns", "offline", broken, "--offline", "--data", data])
        #expect(invalid.status != 0)
        #expect(invalid.stderr.contains("broken.json"))
    }
}
