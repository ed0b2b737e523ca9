// SavedRulesTests -- saved rules that cannot be read or parsed fail closed, loudly: the real binary refuses that
// namespace on every transport (never falling back to default or open rules) until an admin replaces the rules, and
// `canopy serve` refuses to start with a broken `--rules` file.

import CanopyCore
import CanopyNet
import Foundation
import Testing

@Suite struct SavedRulesTests {
    /// How the saved rules file of a namespace is damaged while the daemon is stopped.
    enum Damage: String, CaseIterable, Sendable {
        /// One trailing comma: the file reads but does not parse.
        case trailingComma
        /// A symbolic link to a file that does not exist: opening it fails (ENOENT) even as root.
        case danglingLink
        /// A directory where the file was: opening it for reading works, reading it fails (EISDIR) even as root;
        /// a new file cannot be renamed over it either.
        case directory
    }

    private static let ns = "locked"
    private static let refusal = "security rules of namespace 'locked' could not be loaded"

    /// Expects a REST answer that refuses the namespace because of its rules: 503 with `{"error": …}` saying so.
    private func expectRefused(
        _ answer: (status: Int, json: JSONValue?, response: HTTPClientResponse), _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(answer.status == 503, "\(what): \(answer.response.text)", sourceLocation: sourceLocation)
        let message = answer.json?["error"]?.stringValue ?? ""
        #expect(message.contains(Self.refusal), "\(what): \(answer.response.text)", sourceLocation: sourceLocation)
    }

    /// Expects a wire reply that refuses the namespace: status `unavailable`, the message naming the rules.
    private func expectRefused(_ reply: JSONValue?, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reply?["d"]?["b"]?["s"] == "unavailable", "\(what): \(String(describing: reply))",
            sourceLocation: sourceLocation)
        #expect(reply?["d"]?["b"]?["d"]?.stringValue?.contains(Self.refusal) == true, "\(what)",
            sourceLocation: sourceLocation)
    }

    @Test(.timeLimit(.minutes(2)), arguments: Damage.allCases)
    func aNamespaceWhoseSavedRulesAreBrokenRefusesServiceUntilAnAdminReplacesThem(damage: Damage) throws {
        let data = makeTemporaryDirectory()
        let files = makeTemporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: data)
            try? FileManager.default.removeItem(atPath: files)
        }
        // Open default rules: a fall-back to them would make the namespace readable and writable by anyone.
        let openRules = files + "/open.rules.json"
        try #"{"rules": {".read": true, ".write": true}}"#.write(toFile: openRules, atomically: true, encoding: .utf8)
        let arguments = ["--rules", openRules]
        let ns = Self.ns

        var server = try ServerProcess(dataDirectory: data, extraArguments: arguments)
        var c = HTTPClient(host: "127.0.0.1", port: server.port)
        let admin = [("Authorization", "Bearer \(server.admin)")]
        let closed = #"{"rules": {".read": false, ".write": false}}"#
        #expect(try c.json("PUT", "/.settings/rules.json?ns=\(ns)", closed, headers: admin).status == 200)
        #expect(try c.json("PUT", "/secret.json?ns=\(ns)", "42", headers: admin).status == 200)
        #expect(try c.json("GET", "/secret.json?ns=\(ns)").status == 401)
        server.terminate()

        let rulesFile = data + "/\(ns).rules.json"
        switch damage {
        case .trailingComma:
            try #"{"rules": {".read": false, ".write": false,}}"#.write(
                toFile: rulesFile, atomically: true, encoding: .utf8)
        case .danglingLink:
            try FileManager.default.removeItem(atPath: rulesFile)
            try FileManager.default.createSymbolicLink(atPath: rulesFile, withDestinationPath: files + "/gone.json")
        case .directory:
            try FileManager.default.removeItem(atPath: rulesFile)
            try FileManager.default.createDirectory(atPath: rulesFile, withIntermediateDirectories: false)
        }

        let log = files + "/daemon.log"
        server = try ServerProcess(dataDirectory: data, extraArguments: arguments, logFile: log)
        defer { server.terminate() }
        c = HTTPClient(host: "127.0.0.1", port: server.port)

        // REST: every data request, the admin's too, and the admin API; SSE (a short timeout: a stream that
        // wrongly opened would otherwise hold the test for the client's default 20 s).
        for headers in [[], admin] {
            let who = headers.isEmpty ? "anonymous" : "admin"
            expectRefused(try c.json("GET", "/secret.json?ns=\(ns)", headers: headers), "\(who) GET")
            expectRefused(try c.json("GET", "/.json?ns=\(ns)&shallow=true", headers: headers), "\(who) shallow GET")
            expectRefused(try c.json("PUT", "/secret.json?ns=\(ns)", "1", headers: headers), "\(who) PUT")
            expectRefused(try c.json("POST", "/list.json?ns=\(ns)", "1", headers: headers), "\(who) POST")
            expectRefused(try c.json("PATCH", "/.json?ns=\(ns)", #"{"a":1}"#, headers: headers), "\(who) PATCH")
            expectRefused(try c.json("DELETE", "/secret.json?ns=\(ns)", headers: headers), "\(who) DELETE")
            let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 3)
            expectRefused(
                try stream.json("GET", "/secret.json?ns=\(ns)", headers: headers + [("Accept", "text/event-stream")]),
                "\(who) SSE")
        }
        expectRefused(try c.json("GET", "/.canopy/status?ns=\(ns)", headers: admin), "admin status")
        expectRefused(try c.json("GET", "/.settings/rules.json?ns=\(ns)", headers: admin), "rules GET")

        // The wire protocol: the socket opens and authenticates, every data request is refused.
        let wire = try WireTestClient(port: server.port, namespace: ns)
        #expect(wire.waitFor { $0["t"] == "c" } != nil)
        #expect(wire.reply(wire.request("gauth", ["cred": .string(server.admin)]))?["d"]?["b"]?["s"] == "ok")
        expectRefused(wire.reply(wire.request("q", ["p": "/secret", "h": ""])), "wire listen")
        expectRefused(wire.reply(wire.request("g", ["p": "/secret"])), "wire get")
        expectRefused(wire.reply(wire.request("p", ["p": "/secret", "d": 1])), "wire put")
        expectRefused(wire.reply(wire.request("m", ["p": "/", "d": ["secret": 1]])), "wire merge")
        expectRefused(wire.reply(wire.request("o", ["p": "/secret", "d": 1])), "wire onDisconnect")
        #expect(wire.push("d", timeout: 0.3) == nil)
        // Long polling: the same session, the same refusals.
        let poll = try LongPollTestClient(port: server.port, namespace: ns)
        poll.startPolling()
        expectRefused(poll.reply(try poll.request("q", ["p": "/secret", "h": ""])), "long-poll listen")
        expectRefused(poll.reply(try poll.request("g", ["p": "/secret"])), "long-poll get")

        // Other namespaces keep working, with the default (open) rules.
        #expect(try c.json("PUT", "/x.json?ns=other", "7").status == 200)
        #expect(try c.json("GET", "/x.json?ns=other").json == 7)
        let other = try WireTestClient(port: server.port, namespace: "other")
        #expect(other.reply(other.request("g", ["p": "/x"]))?["d"]?["b"]?["d"] == 7)

        // The log says which file and why.
        let line = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
            .first { $0.contains("rules.load_failed") }
        #expect(line?.contains(rulesFile) == true, "\(String(describing: line))")
        #expect(line?.contains("ns=\(ns)") == true)

        let repaired = #"{"rules": {".read": true, ".write": false}}"#
        if damage == .directory {
            // The file system refuses the new file (a directory is in its way): a storage failure, 5xx, and the
            // namespace stays refused; the operator must remove the directory.
            let put = try c.json("PUT", "/.settings/rules.json?ns=\(ns)", repaired, headers: admin)
            #expect(put.status == 500, "\(put.response.text)")
            #expect(put.json?["error"]?.stringValue?.contains("could not be saved") == true)
            expectRefused(try c.json("GET", "/secret.json?ns=\(ns)"), "GET after the failed repair")
            return
        }
        // The admin replaces the rules over REST, without touching files: service resumes on every transport.
        #expect(try c.json("PUT", "/.settings/rules.json?ns=\(ns)", repaired, headers: admin).status == 200)
        #expect(try c.json("GET", "/.settings/rules.json?ns=\(ns)", headers: admin).json?["rules"]?[".read"] == true)
        #expect(try c.json("GET", "/secret.json?ns=\(ns)").json == 42)
        #expect(try c.json("PUT", "/secret.json?ns=\(ns)", "1").status == 401)
        #expect(wire.reply(wire.request("q", ["p": "/secret", "h": ""]))?["d"]?["b"]?["s"] == "ok")
        #expect(wire.push("d", path: "/secret")?["d"]?["b"]?["d"] == 42)
        #expect(poll.reply(try poll.request("g", ["p": "/secret"]))?["d"]?["b"]?["d"] == 42)

        // The repaired rules were saved: they hold after a restart.
        server.terminate()
        server = try ServerProcess(dataDirectory: data, extraArguments: arguments)
        c = HTTPClient(host: "127.0.0.1", port: server.port)
        #expect(try c.json("GET", "/secret.json?ns=\(ns)").json == 42)
        #expect(try c.json("PUT", "/secret.json?ns=\(ns)", "1").status == 401)
    }

    /// `canopy serve --rules FILE` with a file that cannot be read or parsed refuses to start: exit status 1 and a
    /// message naming the file and the problem, instead of serving with other rules.
    @Test(.timeLimit(.minutes(1))) func serveRefusesToStartWithABrokenRulesFile() throws {
        let files = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: files) }
        let comma = files + "/comma.rules.json"
        try #"{"rules": {".read": false,}}"#.write(toFile: comma, atomically: true, encoding: .utf8)
        let directory = files + "/directory.rules.json"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let cases = [(comma, "invalid"), (directory, "Is a directory"), (files + "/missing.json", "No such file")]
        for (file, reason) in cases {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: canopyBinaryPath())
            process.arguments = ["serve", "--port", "0", "--data", files + "/data", "--rules", file]
            let errors = Pipe()
            process.standardOutput = FileHandle.nullDevice
            process.standardError = errors
            let exited = DispatchSemaphore(value: 0)
            process.terminationHandler = { _ in exited.signal() }
            try process.run()
            guard exited.wait(timeout: .now() + 20) == .success else {
                process.terminate()
                Issue.record("canopy serve --rules \(file) did not exit")
                continue
            }
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 1, "\(file): \(message)")
            #expect(message.contains("canopy: error: rules file '\(file)'"), "\(message)")
            #expect(message.contains(reason), "\(message)")
        }
    }
}
