// NATSTestCluster -- real `nats-server` processes on loopback for tests: one server, or a 3-node JetStream cluster.
//
// Each server gets a config file, a JetStream store directory and a log file in a temporary directory of its own,
// and free loopback ports for clients and routes, below the ephemeral range. `start` returns once every server
// accepts clients; a JetStream cluster then needs a few seconds more to elect its meta leader, which
// `waitForJetStream` (in the tests) covers by retrying. Servers are stopped (SIGKILL, then reaped) by `stop()` or when the value is released.

import CanopyNet
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A failure to start the servers (the binary is missing, a port never opened).
public struct NATSTestClusterError: Error, CustomStringConvertible {
    public let description: String
}

/// One or three `nats-server` processes.
public final class NATSTestCluster: @unchecked Sendable {
    // safe: `processes` is written by `start` and `kill`, which tests call from one thread.
    public struct Node {
        public let name: String
        public let clientPort: Int
        public let clusterPort: Int
        public let configFile: String
        public let logFile: String
        public var url: String { "nats://127.0.0.1:\(clientPort)" }
    }

    public let directory: URL
    public let nodes: [Node]
    private var processes: [Process?]

    /// The `nats-server` binary (Debian's package puts it in /usr/sbin), nil if it is not installed.
    public static var binary: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin"] {
            let candidate = directory + "/nats-server"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Starts `count` servers (1: a plain server with JetStream; 3: a JetStream cluster with full-mesh routes).
    /// - Parameter extraConfig: lines added to every server's config (`max_payload: 1024`).
    public init(count: Int = 3, extraConfig: String = "") throws {
        guard let binary = Self.binary else {
            throw NATSTestClusterError(
                description: "nats-server is not installed (Debian package 'nats-server'; Tests/run.sh installs it)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("canopy-nats-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Client and route ports, distinct, below the kernel's ephemeral range: the servers start one after another
        // and dial each other's routes at once, each dial taking a source port from that range, so a route port
        // picked there can be taken by such a dial before its own server binds it ("bind: address already in use",
        // seen in CI). No outgoing connection uses a port below it.
        let ports = try Socket.freeLoopbackPortsBelowEphemeralRange(count: 2 * count)
        var nodes: [Node] = []
        for index in 0..<count {
            let name = "n\(index + 1)"
            let store = directory.appendingPathComponent("js-\(name)").path
            var config = """
                server_name: \(name)
                listen: 127.0.0.1:\(ports[index])
                jetstream { store_dir: "\(store)" }
                \(extraConfig)

                """
            if count > 1 {
                let routes = (0..<count).map { "\"nats://127.0.0.1:\(ports[count + $0])\"" }.joined(separator: ", ")
                config += """
                    cluster { name: canopy-test, listen: 127.0.0.1:\(ports[count + index]), routes: [\(routes)] }

                    """
            }
            let file = directory.appendingPathComponent("\(name).conf").path
            try config.write(toFile: file, atomically: true, encoding: .utf8)
            nodes.append(
                Node(
                    name: name, clientPort: ports[index], clusterPort: ports[count + index], configFile: file,
                    logFile: directory.appendingPathComponent("\(name).log").path))
        }
        self.nodes = nodes
        processes = Array(repeating: nil, count: count)
        do {
            for index in nodes.indices { try launch(index, binary: binary) }
            for node in nodes { try Self.waitForPort(node.clientPort, logFile: node.logFile) }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// The client URLs of every node, comma-separated (`--cluster` form).
    public var urls: String { nodes.map(\.url).joined(separator: ",") }

    private func launch(_ index: Int, binary: String) throws {
        let node = nodes[index]
        _ = FileManager.default.createFile(atPath: node.logFile, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: node.logFile))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-c", node.configFile]
        process.standardOutput = log
        process.standardError = log
        try process.run()
        processes[index] = process
    }

    /// `kill -9` of one node (by index).
    public func kill(_ index: Int) {
        guard let process = processes[index] else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        processes[index] = nil
    }

    /// Sends `signal` (SIGSTOP, SIGCONT) to one node.
    public func signal(_ index: Int, _ signal: Int32) {
        guard let process = processes[index] else { return }
        Glibc.kill(process.processIdentifier, signal)
    }

    public func isRunning(_ index: Int) -> Bool { processes[index]?.isRunning ?? false }

    /// Kills every node and removes the directory.
    public func stop() {
        for index in processes.indices { kill(index) }
        try? FileManager.default.removeItem(at: directory)
    }

    /// The log of one node (for failure messages).
    public func log(_ index: Int) -> String {
        (try? String(contentsOfFile: nodes[index].logFile, encoding: .utf8)) ?? ""
    }

    /// Waits until `port` accepts connections; fails with the node's log after 30 s.
    static func waitForPort(_ port: Int, logFile: String) throws {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if connected { return }
            usleep(20_000)
        }
        let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        throw NATSTestClusterError(description: "nats-server did not open port \(port) within 30 s; its log:\n\(log)")
    }
}
