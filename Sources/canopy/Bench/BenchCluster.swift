// BenchCluster -- the processes of `canopy bench cluster`: three nats-server with JetStream (full-mesh routes),
// three `canopy serve --cluster` nodes of this same binary sharing one signing key and admin credential, and one
// single-node `canopy serve --sync full` as the baseline, on free loopback ports, everything in one temporary
// directory. With `replicate` the cluster nodes run with `--replicate` (the fan-out phase: listeners on every node).
//
// Clean-up on every exit path: `stop()` (called by the benchmark's `defer` and on deinit) kills every child and
// removes the directory; SIGINT, SIGTERM and SIGHUP do the same from a signal source, then exit with 130.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization

/// Three NATS servers, three cluster nodes and one single node, all child processes. Driven from one thread.
final class BenchCluster {
    /// The names of the cluster nodes, in the order of ``nodes``.
    static let nodeNames = ["c1", "c2", "c3"]

    let directory: String
    let lease: Int
    /// The cluster nodes serve namespaces they do not own from replicas (`--replicate`).
    let replicate: Bool
    /// More `canopy serve` options for the cluster nodes, and their `--log-level`.
    let nodeArguments: [String]
    let nodeLogLevel: String
    /// The NATS client URLs, comma-separated (`--cluster`).
    let natsURLs: String
    private(set) var nats: [FanoutChild] = []
    /// The cluster nodes; nil once killed.
    private(set) var nodes: [FanoutChild?] = []
    /// Their ports, fixed before they start (each advertises its own).
    let nodePorts: [Int]
    private(set) var single: FanoutChild?
    /// The admin credential every cluster node accepts.
    private(set) var credential = ""
    private(set) var singleCredential = ""
    /// What the interrupt handler kills and removes: child pids and the directory.
    private let interruptCleanup: InterruptCleanup
    private var interruptSources: [any DispatchSourceSignal] = []

    /// Starts everything; on failure, stops what was started and throws.
    /// - Parameters:
    ///   - natsServer: the `nats-server` executable.
    ///   - lease: the cluster nodes' `--lease` in milliseconds.
    ///   - replicate: start the cluster nodes with `--replicate`.
    ///   - nodeArguments: more options for the cluster nodes; `nodeLogLevel`: their `--log-level`.
    init(
        natsServer: String, lease: Int, replicate: Bool = false, nodeArguments: [String] = [],
        nodeLogLevel: String = "warning"
    ) throws {
        directory = NSTemporaryDirectory() + "canopy-bench-cluster-" + UUID().uuidString
        self.lease = lease
        self.replicate = replicate
        self.nodeArguments = nodeArguments
        self.nodeLogLevel = nodeLogLevel
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        interruptCleanup = InterruptCleanup(directory: directory)
        let ports = try Socket.freeLoopbackPortsBelowEphemeralRange(count: 9)
        natsURLs = (0..<3).map { "nats://127.0.0.1:\(ports[$0])" }.joined(separator: ",")
        nodePorts = Array(ports[6..<9])
        installInterruptHandlers()
        do {
            try startNATS(natsServer, clientPorts: Array(ports[0..<3]), routePorts: Array(ports[3..<6]))
            try startNodes()
            let singleData = directory + "/single"
            single = try FanoutChild.startServe(
                arguments: ["--port", "0", "--data", singleData, "--log-level", "warning", "--sync", "full"],
                name: "single", logFile: directory + "/single.log")
            interruptCleanup.add(single?.pid)
            singleCredential = try readFile(singleData + "/admin.credential")
                .trimmingCharacters(in: .whitespacesAndNewlines)
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Kills every child and removes the directory (again and again harmlessly).
    func stop() {
        // The handlers first: from here on nothing else kills a pid this process may already have reaped.
        for source in interruptSources { source.cancel() }
        for signalNumber in [SIGINT, SIGTERM, SIGHUP] { signal(signalNumber, SIG_DFL) }
        interruptSources = []
        for node in nodes { node?.kill9() }
        single?.kill9()
        for server in nats { server.kill9() }
        for child in nodes.compactMap({ $0 }) + [single].compactMap({ $0 }) + nats { child.stop() }
        nodes = nodes.map { _ in nil }
        single = nil
        nats = []
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `kill -9` of cluster node `index`.
    func kill9(node index: Int) {
        interruptCleanup.remove(nodes[index]?.pid)
        nodes[index]?.kill9()
        nodes[index] = nil
    }

    /// The cluster node serving on `port`, if any.
    func nodeIndex(ofPort port: Int) -> Int? { nodePorts.firstIndex(of: port) }

    var authorization: [(String, String)] { [("Authorization", "Bearer \(credential)")] }

    /// A request to the node on `port`, following 307s to the owner (up to 3), the credential sent again each
    /// time (an HTTP client drops `Authorization` on a redirect to another origin). Nodes proxy REST to the owner
    /// by default (`--cluster-rest proxy`); a proxied answer names the owner in `X-Canopy-Owner`.
    /// - Returns: the last answer and the port of the owner that gave it (the proxy's owner, else the node's).
    func request(_ method: String, _ target: String, body: String = "", via port: Int, timeoutSeconds: Int = 10)
        throws -> (response: HTTPClientResponse, port: Int)
    {
        var port = port
        for _ in 0..<4 {
            let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: timeoutSeconds)
            defer { client.close() }
            let response = try client.request(method, target, headers: authorization, body: Array(body.utf8))
            if response.status == 307, let next = Self.redirectPort(response) {
                port = next
                continue
            }
            return (response, Self.ownerPort(response) ?? port)
        }
        throw CommandFailure("\(method) \(target): redirected more than 3 times")
    }

    /// The port a 307's `Location` names.
    static func redirectPort(_ response: HTTPClientResponse) -> Int? {
        response.header("location").flatMap { URL(string: $0)?.port }
    }

    /// The port of the owner that answered a proxied request (`X-Canopy-Owner: http://host:port`).
    static func ownerPort(_ response: HTTPClientResponse) -> Int? {
        response.header("x-canopy-owner").flatMap { URL(string: $0)?.port }
    }

    /// The owner of `namespace`: writes `/bench/probe` through node c1 until a node acknowledges it (the cluster's
    /// streams may still be electing leaders), following redirects or reading the proxy's `X-Canopy-Owner`.
    /// - Returns: the owner's index in ``nodes``.
    func owner(of namespace: String, timeoutSeconds: Double = 60) throws -> Int {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        var last = "no answer"
        while Date() < deadline {
            do {
                let (response, port) = try request(
                    "PUT", "/bench/probe.json?ns=\(namespace)&print=silent", body: "true", via: nodePorts[0])
                if (200..<300).contains(response.status), let index = nodeIndex(ofPort: port) { return index }
                last = "\(response.status) \(response.text)"
            } catch {
                last = "\(error)"
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        throw CommandFailure(
            "no cluster node acknowledged a write to \(namespace) within \(Int(timeoutSeconds)) s (last: \(last))"
                + "\n" + logTails())
    }

    /// The last lines of every child's log, for a failure message (the directory goes with the benchmark).
    func logTails(lines: Int = 8) -> String {
        let names = (1...3).map { "n\($0)" } + Self.nodeNames + ["single"]
        return names.compactMap { name -> String? in
            guard let text = try? String(contentsOfFile: directory + "/\(name).log", encoding: .utf8),
                !text.isEmpty
            else { return nil }
            let tail = text.split(separator: "\n").suffix(lines).joined(separator: "\n  ")
            return "\(name).log:\n  \(tail)"
        }.joined(separator: "\n")
    }

    // MARK: - Starting

    private func startNATS(_ executable: String, clientPorts: [Int], routePorts: [Int]) throws {
        let routes = routePorts.map { "\"nats://127.0.0.1:\($0)\"" }.joined(separator: ", ")
        for index in 0..<3 {
            let name = "n\(index + 1)"
            let config = """
                server_name: \(name)
                listen: 127.0.0.1:\(clientPorts[index])
                max_payload: 8MB
                jetstream { store_dir: "\(directory)/js-\(name)" }
                cluster { name: canopy-bench, listen: 127.0.0.1:\(routePorts[index]), routes: [\(routes)] }

                """
            let file = directory + "/\(name).conf"
            try config.write(toFile: file, atomically: true, encoding: .utf8)
            let child = try FanoutChild.start(
                executable, arguments: ["-c", file], name: name, port: clientPorts[index],
                logFile: directory + "/\(name).log")
            nats.append(child)
            interruptCleanup.add(child.pid)
        }
    }

    /// c1 first: it creates the signing key and admin credential, which c2 and c3 get copies of.
    private func startNodes() throws {
        let data = Self.nodeNames.map { directory + "/" + $0 }
        for path in data { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        nodes = Array(repeating: nil, count: 3)
        for index in 0..<3 {
            if index == 1 {
                for file in ["signing.key", "admin.credential"] {
                    for other in data.dropFirst() {
                        try FileManager.default.copyItem(atPath: data[0] + "/" + file, toPath: other + "/" + file)
                    }
                }
            }
            let name = Self.nodeNames[index]
            let port = nodePorts[index]
            let child = try FanoutChild.startServe(
                arguments: [
                    "--port", "\(port)", "--data", data[index], "--log-level", nodeLogLevel, "--cluster", natsURLs,
                    "--node", name, "--advertise", "http://127.0.0.1:\(port)", "--lease", "\(lease)",
                ] + (replicate ? ["--replicate"] : []) + nodeArguments, name: name, logFile: directory + "/\(name).log", timeoutSeconds: 60)
            nodes[index] = child
            interruptCleanup.add(child.pid)
        }
        credential = try readFile(data[0] + "/admin.credential").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func installInterruptHandlers() {
        let cleanup = interruptCleanup
        interruptSources = [SIGINT, SIGTERM, SIGHUP].map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                print("\ncanopy bench cluster: interrupted; stopping nats-server and canopy children")
                cleanup.run()
                exit(130)
            }
            source.resume()
            return source
        }
    }

}

/// The children's pids and the temporary directory, for the signal handler (which runs on another thread).
private final class InterruptCleanup: Sendable {
    private let pids = Mutex<[Int32]>([])
    private let directory: String

    init(directory: String) { self.directory = directory }

    func add(_ pid: Int32?) {
        guard let pid else { return }
        pids.withLock { $0.append(pid) }
    }

    /// Forgets a child about to be killed and reaped (its pid may then be reused by another process).
    func remove(_ pid: Int32?) {
        guard let pid else { return }
        pids.withLock { $0.removeAll { $0 == pid } }
    }

    /// SIGKILL to every child still listed, then removes the directory.
    func run() {
        for pid in pids.withLock({ $0 }) { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
