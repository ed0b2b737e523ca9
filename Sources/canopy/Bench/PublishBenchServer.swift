// PublishBenchServer -- the `canopy serve` child process a benchmark runs against, and REST calls to it.

#if canImport(Glibc)
    import Glibc
#endif
import CCanopyLinux
import CanopyCore
import CanopyNet
import Foundation

/// A daemon started as a separate process on 127.0.0.1 with a fresh data directory; `stop()` ends it.
final class PublishBenchServer {
    let port: Int
    let adminCredential: String
    let namespace: String
    private let process: Process
    private let dataDirectory: String
    /// The daemon's data directory (its signing key, for benchmarks that mint tokens).
    var dataDirectoryPath: String { dataDirectory }
    private let client: HTTPClient

    /// The child's process ID (for its thread, memory and descriptor counts).
    var processID: Int32 { process.processIdentifier }
    /// Whether `stop()` removes the data directory.
    private let removesData: Bool

    /// Raises RLIMIT_NOFILE, spawns `<binary> serve --port 0`, and waits for its port and credential.
    /// - Parameters:
    ///   - binary: the `canopy` to run (default: this one), e.g. another build to compare with.
    ///   - dataDirectory: a data directory to reuse (kept on `stop()`); default a fresh one, removed on `stop()`.
    ///   - arguments: more `serve` options.
    init(namespace: String, binary: String? = nil, dataDirectory: String? = nil, arguments: [String] = []) throws {
        raiseOpenFileLimit()
        self.namespace = namespace
        removesData = dataDirectory == nil
        self.dataDirectory =
            dataDirectory
            ?? NSTemporaryDirectory() + "canopy-bench-publish-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let dataDirectory = self.dataDirectory
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary ?? Self.executablePath())
        process.arguments = ["serve", "--port", "0", "--data", dataDirectory, "--log-level", "warning"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        var collected = ""
        var found = 0
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            collected += String(decoding: data, as: UTF8.self)
            if let range = collected.range(of: #"serving http://127\.0\.0\.1:[0-9]+ "#, options: .regularExpression) {
                found = Int(collected[range].dropLast().split(separator: ":").last ?? "") ?? 0  // whole line only
                break
            }
        }
        guard found > 0,
            let credential = try? String(contentsOfFile: dataDirectory + "/admin.credential", encoding: .utf8)
        else {
            process.terminate()
            process.waitUntilExit()
            if removesData { try? FileManager.default.removeItem(atPath: dataDirectory) }
            throw CommandFailure("the benchmark daemon did not start: \(collected)")
        }
        port = found
        adminCredential = credential.trimmingCharacters(in: .whitespacesAndNewlines)
        client = HTTPClient(host: "127.0.0.1", port: found, timeoutSeconds: 300)
    }

    /// Terminates the child (SIGTERM, then SIGKILL after 60 s) and removes its data directory unless it was given.
    func stop() {
        client.close()
        if process.isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(60)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        if removesData { try? FileManager.default.removeItem(atPath: dataDirectory) }
    }

    /// One admin REST request; throws unless the status is 2xx.
    @discardableResult
    func request(_ method: String, _ target: String, body: JSONValue? = nil) throws -> HTTPClientResponse {
        let separator = target.contains("?") ? "&" : "?"
        let bytes = body.map { Array($0.serialized().utf8) } ?? []
        let response = try client.request(
            method, target + separator + "ns=" + namespace,
            headers: [("Authorization", "Bearer \(adminCredential)"), ("Content-Type", "application/json")],
            body: bytes)
        guard (200..<300).contains(response.status) else {
            throw CommandFailure("\(method) \(target) failed (\(response.status)): \(response.text.prefix(300))")
        }
        return response
    }

    /// `PUT /<path>.json`.
    func put(_ path: Path, _ value: JSONValue) throws {
        try request("PUT", path.description + ".json?print=silent", body: value)
    }

    /// `PATCH /<path>.json`.
    func patch(_ path: Path, _ value: JSONValue) throws {
        try request("PATCH", path.description + ".json?print=silent", body: value)
    }

    private static func executablePath() -> String {
        if let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return link }
        return CommandLine.arguments[0]
    }
}

/// Raises this process's soft open-file limit to its hard limit (children inherit it).
func raiseOpenFileLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
