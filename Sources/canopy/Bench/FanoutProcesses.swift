// FanoutProcesses -- child servers for the fan-out bench: a Canopy daemon and redis-server, plus fd limits and RSS.

import CCanopyLinux
import CanopyNet
import Foundation
import Synchronization

/// A server process the benchmark started; terminated by ``stop()`` (and on deinit).
final class FanoutChild {
    let name: String
    private(set) var port: Int
    private let process: Process
    private let cleanUp: () -> Void

    private init(name: String, port: Int, process: Process, cleanUp: @escaping () -> Void) {
        self.name = name
        self.port = port
        self.process = process
        self.cleanUp = cleanUp
    }

    deinit { stop() }

    var pid: Int32 { process.processIdentifier }

    /// The child's resident set size (VmRSS) in KiB, nil if it cannot be read.
    var rssKiB: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }

    /// The child's CPU time so far (user + system) in seconds, from `/proc/<pid>/stat`; nil if it cannot be read.
    var cpuSeconds: Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// This process's CPU time so far (user + system, all threads) in seconds.
    static func ownCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// `kill -9` of the child, reaped at once (its clean-up still runs in ``stop()``).
    func kill9() {
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    /// Terminates the child (SIGTERM, then SIGKILL after 5 s) and waits for it.
    func stop() {
        if process.isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            if process.isRunning { kill(pid, SIGKILL) }
            process.waitUntilExit()
        }
        cleanUp()
    }

    /// Starts `canopy serve` (this same binary) on a fresh temporary data directory and an ephemeral port.
    /// - Returns: the child and the admin credential.
    /// - Parameters:
    ///   - sync: the daemon's `--sync` mode (`full` or `normal`).
    ///   - maxConnections: the daemon's `--max-connections` (subscribers, the writer and some slack).
    ///   - tls: serve HTTPS/WSS with this certificate (`--tls-cert`/`--tls-key`); nil for plaintext.
    static func startDaemon(sync: String = "full", maxConnections: Int, tls: BenchCertificate? = nil) throws -> (
        FanoutChild, credential: String
    ) {
        let data = NSTemporaryDirectory() + "canopy-fanout-" + UUID().uuidString
        var arguments = [
            "--port", "0", "--data", data, "--log-level", "warning", "--sync", sync,
            "--max-connections", "\(maxConnections)",
        ]
        if let tls { arguments += ["--tls-cert", tls.certificateFile, "--tls-key", tls.keyFile] }
        let child = try startServe(arguments: arguments) { try? FileManager.default.removeItem(atPath: data) }
        let credential = try readFile(data + "/admin.credential").trimmingCharacters(in: .whitespacesAndNewlines)
        return (child, credential)
    }

    /// Starts `canopy serve <arguments>` (this same binary) and waits for the line naming the port it serves on.
    /// - Parameters:
    ///   - name: what the child is called in reports (`canopy`, a cluster node's name).
    ///   - logFile: where its standard error goes (nil: inherited, the benchmark's own).
    ///   - timeoutSeconds: how long it may take to serve (a cluster node waits for JetStream's meta leader).
    ///   - cleanUp: run once the child has stopped (removing its data directory).
    static func startServe(
        arguments: [String], name: String = "canopy", logFile: String? = nil, timeoutSeconds: Double = 20,
        cleanUp: @escaping () -> Void = {}
    ) throws -> FanoutChild {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve"] + arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardInput = FileHandle.nullDevice
        if let logFile {
            _ = FileManager.default.createFile(atPath: logFile, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: logFile)
        }
        try process.run()
        let child = FanoutChild(name: name, port: 0, process: process, cleanUp: cleanUp)
        guard let line = firstLine(of: stdout, containing: "canopy: serving ", timeoutSeconds: timeoutSeconds),
            let url = line.split(separator: "://").last?.split(separator: " ").first,
            let port = url.split(separator: ":").last.flatMap({ Int($0) })
        else {
            child.stop()
            throw CommandFailure("\(name) did not report its port (is '\(executable) serve' working?)")
        }
        child.port = port
        return child
    }

    /// Starts `executable` with `arguments` (standard output and error to `logFile`) and waits until something
    /// accepts connections on `port` of 127.0.0.1.
    static func start(
        _ executable: String, arguments: [String], name: String, port: Int, logFile: String
    ) throws -> FanoutChild {
        _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        let log = FileHandle(forWritingAtPath: logFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let child = FanoutChild(name: name, port: port, process: process) {}
        guard waitUntilAccepting(port: port, timeoutSeconds: 30, while: process) else {
            let exited = !process.isRunning
            child.stop()
            let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            let tail = log.split(separator: "\n").suffix(8).map { "  " + $0 }.joined(separator: "\n")
            throw CommandFailure(
                "\(name) \(exited ? "exited before listening" : "did not start listening within 30 s") on "
                    + "127.0.0.1:\(port); the end of its log (\(logFile)):\n\(tail)")
        }
        return child
    }

    /// Starts `redis-server` on a free loopback port; nil if it is not installed.
    /// - Parameter durable: log every write to an append-only file fsynced before the reply (`--appendonly yes
    ///   --appendfsync always`, in a fresh temporary directory), Redis's "acknowledged means on disk"; false turns
    ///   persistence off (pub/sub needs none).
    static func startRedis(maxClients: Int, durable: Bool = false) throws -> FanoutChild? {
        guard let executable = findExecutable("redis-server") else { return nil }
        let probe = try Socket.listen(host: "127.0.0.1", port: 0)
        Socket.close(probe.fd)
        let directory = NSTemporaryDirectory() + "canopy-bench-redis-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "--port", "\(probe.port)", "--bind", "127.0.0.1", "--save", "", "--dir", directory,
            "--maxclients", "\(maxClients)", "--loglevel", "warning", "--daemonize", "no", "--protected-mode", "no",
        ] + (durable ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"])
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let child = FanoutChild(name: "redis", port: probe.port, process: process) {
            try? FileManager.default.removeItem(atPath: directory)
        }
        guard waitUntilAccepting(port: probe.port, timeoutSeconds: 10) else {
            child.stop()
            throw CommandFailure("redis-server did not start listening on 127.0.0.1:\(probe.port)")
        }
        return child
    }

    /// Raises RLIMIT_NOFILE to at least `wanted` (the hard limit too, when permitted); returns the soft limit.
    @discardableResult
    static func raiseOpenFileLimit(to wanted: Int) -> Int {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        if Int(limit.rlim_cur) >= wanted { return Int(limit.rlim_cur) }
        var raised = limit
        raised.rlim_cur = rlim_t(wanted)
        raised.rlim_max = max(limit.rlim_max, rlim_t(wanted))
        if setrlimit(resource, &raised) != 0 {
            raised.rlim_cur = limit.rlim_max
            raised.rlim_max = limit.rlim_max
            _ = setrlimit(resource, &raised)
        }
        _ = getrlimit(resource, &limit)
        return Int(limit.rlim_cur)
    }

    // MARK: Helpers

    /// The first executable called `name` on PATH (or in /usr/sbin, /usr/bin).
    static func findExecutable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let candidates = path.split(separator: ":").map { "\($0)/\(name)" } + ["/usr/sbin/\(name)", "/usr/bin/\(name)"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Reads the pipe until a line containing `marker` appears; drains the rest in the background.
    private static func firstLine(of pipe: Pipe, containing marker: String, timeoutSeconds: Double) -> String? {
        let found = Mutex<String?>(nil)
        let seen = DispatchSemaphore(value: 0)
        let handle = pipe.fileHandleForReading
        Thread {
            var buffer = ""
            var signalled = false
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                guard !signalled else { continue }
                buffer += String(decoding: data, as: UTF8.self)
                if let line = buffer.split(separator: "\n").first(where: { $0.contains(marker) }) {
                    found.withLock { $0 = String(line) }
                    signalled = true
                    seen.signal()
                }
            }
            if !signalled { seen.signal() }
        }.start()
        _ = seen.wait(timeout: .now() + timeoutSeconds)
        return found.withLock { $0 }
    }

    /// - Parameter process: stop waiting as soon as it has exited (nil: wait out the timeout).
    private static func waitUntilAccepting(port: Int, timeoutSeconds: Double, while process: Process? = nil) -> Bool {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline, process?.isRunning ?? true {
            if let fd = try? Socket.connect(host: "127.0.0.1", port: port) {
                var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&entry, 1, 200) == 1 && Socket.pendingError(fd) == 0
                Socket.close(fd)
                if ready { return true }
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }
}
