// TestServer -- starts a real Canopy daemon (in-process, or the built binary) on 127.0.0.1:0 with a fresh data dir.

import CanopyCore
import CanopyNet
import CanopyServer
import Foundation
import Testing

/// A fresh temporary directory, removed by `remove()`.
func makeTemporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "canopy-test-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// An in-process daemon on its own thread.
final class InProcessServer: @unchecked Sendable {  // safe: `daemon` is set once before the thread starts
    let daemon: Daemon
    let dataDirectory: String
    private let finished = DispatchSemaphore(value: 0)

    init(configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        dataDirectory = makeTemporaryDirectory()
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.dataDirectory = dataDirectory
        configure(&configuration)
        daemon = try Daemon(configuration: configuration)
        try daemon.start()
        let thread = Thread { [daemon, finished] in
            daemon.run()
            finished.signal()
        }
        thread.start()
    }

    var port: Int { daemon.port }
    var admin: String { daemon.credentials.adminSecret }

    func client() -> HTTPClient { HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 20) }

    /// Stops the daemon gracefully and waits for its loop to end.
    func stop(removeData: Bool = true) {
        daemon.stop()
        _ = finished.wait(timeout: .now() + 20)
        if removeData { try? FileManager.default.removeItem(atPath: dataDirectory) }
    }
}

/// A wall clock that stands still (token expiry is wall-clock time; with a `ManualClock` as the daemon's loop clock
/// an expiry then fires exactly when the test advances past it).
struct FixedWallClock: WallClock {
    let milliseconds: Int64
    func nowMilliseconds() -> Int64 { milliseconds }
}

/// The daemon's time under a test's control: a wall clock that stands still and a loop clock that moves only when
/// the test advances it, so an expiry or timeout fires exactly at its deadline.
struct DaemonTime {
    let loop = ManualClock()
    let wall = FixedWallClock(milliseconds: 1_700_000_000_000)

    /// Gives `configuration` these clocks.
    func apply(to configuration: inout ServerConfiguration) {
        configuration.clock = wall
        configuration.loopClock = loop
    }
}

/// Runs `body` with a fresh in-process server, stopping it afterwards.
func withServer<T>(
    configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (InProcessServer) throws -> T
) throws -> T {
    let server = try InProcessServer(configure: configure)
    defer { server.stop() }
    return try body(server)
}

extension HTTPClient {
    /// Sends a request with a JSON body (a string of JSON) and returns status and parsed JSON body.
    func json(
        _ method: String, _ target: String, _ body: String? = nil, headers: [(String, String)] = []
    ) throws -> (status: Int, json: JSONValue?, response: HTTPClientResponse) {
        let response = try request(method, target, headers: headers, body: body.map { Array($0.utf8) } ?? [])
        let parsed = response.body.isEmpty ? nil : try? JSONValue.parse(response.body)
        return (response.status, parsed, response)
    }
}

/// The path of the built `canopy` binary (set by Tests/run.sh; falls back to the debug build).
func canopyBinaryPath() -> String {
    if let path = ProcessInfo.processInfo.environment["CANOPY_BIN"] { return path }
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    return root.appendingPathComponent(".build/debug/canopy").path
}

/// The real `canopy serve` binary as a child process.
final class ServerProcess: @unchecked Sendable {  // safe: tests call kill9/terminate once, from one thread at a time
    let process = Process()
    let dataDirectory: String
    private(set) var port = 0
    /// The `--metrics-port` it reported (0 without one).
    private(set) var metricsPort = 0
    private let output = Pipe()

    /// - Parameters:
    ///   - logFile: where the daemon's log (its standard error, warnings and above) goes; discarded if nil.
    ///   - environment: variables added to the test's environment (`CANOPY_*` options).
    ///   - baseArguments: the options before `extraArguments` (a test of environment variables leaves some out).
    init(
        dataDirectory: String, extraArguments: [String] = [], logFile: String? = nil,
        environment: [String: String] = [:],
        baseArguments: [String]? = nil
    ) throws {
        self.dataDirectory = dataDirectory
        process.executableURL = URL(fileURLWithPath: canopyBinaryPath())
        process.arguments =
            ["serve"] + (baseArguments ?? ["--port", "0", "--data", dataDirectory, "--log-level", "warning"])
            + extraArguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let wantsMetrics = extraArguments.contains("--metrics-port") || environment["CANOPY_METRICS_PORT"] != nil
        process.standardOutput = output
        if let logFile {
            _ = FileManager.default.createFile(atPath: logFile, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: logFile)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        var collected = ""
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            collected += String(decoding: data, as: UTF8.self)
            if port == 0,
                let range = collected.range(of: #"serving http://127\.0\.0\.1:([0-9]+) "#, options: .regularExpression)
            {
                let text = collected[range]
                port = Int(text.split(separator: ":").last!.dropLast()) ?? 0  // the space after the port: the line is whole
            }
            if let range = collected.range(
                of: #"metrics on http://127\.0\.0\.1:([0-9]+)/"#, options: .regularExpression)
            {
                metricsPort = Int(collected[range].split(separator: ":").last!.dropLast()) ?? 0
            }
            if port > 0 && (!wantsMetrics || metricsPort > 0) { break }
        }
        guard port > 0 else {
            process.terminate()
            throw HTTPClientError("canopy serve did not report its port: \(collected)")
        }
    }

    var admin: String {
        (try? String(contentsOfFile: dataDirectory + "/admin.credential", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func terminate() {
        process.terminate()
        process.waitUntilExit()
    }

    /// Sends SIGTERM (the daemon drains) without waiting.
    func sendTerminate() {
        kill(process.processIdentifier, SIGTERM)
    }

    /// Waits up to `timeout` seconds for the process to exit; its exit status, or nil if it is still running.
    func waitForExit(timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        guard !process.isRunning else { return nil }
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }
}
