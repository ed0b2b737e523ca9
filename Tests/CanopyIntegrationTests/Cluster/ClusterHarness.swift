// ClusterHarness -- a real cluster for tests: three nats-server processes with JetStream (NATSTestCluster) and
// N `canopy serve --cluster` processes on loopback ports, sharing one signing key and admin credential as an
// operator's nodes do.

import CanopyCore
import CanopyNATS
import CanopyNet
import CanopyTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

final class CanopyCluster: @unchecked Sendable {  // safe: tests drive it from one thread
    let nats: NATSTestCluster
    let ports: [Int]
    let directories: [String]
    let lease: Int
    private(set) var nodes: [ServerProcess?]
    let logDirectory: String
    let redirectREST: Bool
    let replicate: Bool
    let extraArguments: [String]

    /// Starts NATS and `count` Canopy nodes (`c1`, `c2`, …) with a short lease so failovers are quick.
    /// - Parameter redirectREST: nodes answer REST for namespaces they do not own with `307` instead of proxying.
    /// - Parameter replicate: nodes serve namespaces they do not own from replicas (`--replicate`).
    /// - Parameter started: how many of the nodes start now (the others with `start(_:)` later).
    /// - Parameter extraArguments: more `canopy serve` options for every node.
    /// - Parameter maxPayload: the NATS servers' `max_payload`.
    init(
        count: Int = 3, lease: Int = 3000, redirectREST: Bool = false, replicate: Bool = false, started: Int? = nil,
        extraArguments: [String] = [], maxPayload: String = "8MB"
    ) throws {
        self.redirectREST = redirectREST
        self.replicate = replicate
        self.extraArguments = extraArguments
        nats = try NATSTestCluster(count: 3, extraConfig: "max_payload: \(maxPayload)")
        self.lease = lease
        // Drawn together, each held until all are chosen: drawn one by one, two nodes were once given the same port
        // and the second failed to bind.
        ports = try Socket.freeLoopbackPortsBelowEphemeralRange(count: count)
        let root = makeTemporaryDirectory()
        logDirectory = root
        directories = (0..<count).map { root + "/c\($0 + 1)" }
        nodes = Array(repeating: nil, count: count)
        for directory in directories {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        try start(0)
        admin = nodes[0]?.admin ?? ""
        // One key and one admin credential for the whole cluster: a token any node minted works on every node.
        for directory in directories.dropFirst() {
            for file in ["signing.key", "admin.credential"] {
                try FileManager.default.copyItem(atPath: directories[0] + "/" + file, toPath: directory + "/" + file)
            }
        }
        for index in 1..<(started ?? count) { try start(index) }
    }

    deinit { stop() }

    /// The cluster's admin credential (every node has the same one).
    private(set) var admin = ""
    var adminHeader: [(String, String)] { [("Authorization", "Bearer \(admin)")] }

    func start(_ index: Int) throws {
        nodes[index] = try ServerProcess(
            dataDirectory: directories[index],
            extraArguments: [
                "--cluster", nats.urls, "--node", "c\(index + 1)", "--advertise", "http://127.0.0.1:\(ports[index])",
                "--lease", "\(lease)",
            ] + (redirectREST ? ["--cluster-rest", "redirect"] : []) + (replicate ? ["--replicate"] : []) + extraArguments,
            logFile: logDirectory + "/c\(index + 1).log",
            baseArguments: [
                "--port", "\(ports[index])", "--data", directories[index], "--log-level", "notice",
            ])
    }

    /// A NATS connection of the test's own to the cluster's servers, and its JetStream API (to look at the log).
    func jetStream() throws -> (NATSConnection, JetStream) {
        var options = NATSOptions(
            servers: nats.nodes.map { NATSServerAddress(host: "127.0.0.1", port: $0.clientPort) })
        options.reconnectTimeout = .seconds(8)
        let connection = try NATSConnection(options: options)
        return (connection, JetStream(connection, timeout: .seconds(4)))
    }

    func kill9(_ index: Int) {
        nodes[index]?.kill9()
        nodes[index] = nil
    }

    func signal(_ index: Int, _ signal: Int32) {
        if let pid = nodes[index]?.process.processIdentifier { kill(pid, signal) }
    }

    func stop() {
        for index in nodes.indices {
            if let node = nodes[index] {
                kill(node.process.processIdentifier, SIGCONT)
                node.kill9()
            }
            nodes[index] = nil
        }
        nats.stop()
    }

    func log(_ index: Int) -> String {
        (try? String(contentsOfFile: logDirectory + "/c\(index + 1).log", encoding: .utf8)) ?? ""
    }

    func index(ofPort port: Int) -> Int? { ports.firstIndex(of: port) }

    /// The node whose log says it claimed `ns` last (with replicas every node answers reads itself).
    func claimant(of ns: String) -> Int? {
        nodes.indices.filter { index in
            log(index).split(separator: "\n").contains { $0.contains("event=cluster.claimed") && $0.contains(" ns=\(ns) ") }
        }.first
    }

    /// A REST request sent to node `index`, following `307` redirects to the owner (re-sending the credential,
    /// which a client must do itself: HTTP clients drop `Authorization` on a redirect to another port).
    /// Returns the answer and the index of the node that gave it.
    func request(
        _ method: String, _ target: String, body: String? = nil, via index: Int, timeout: Int = 10
    ) throws -> (status: Int, json: JSONValue?, node: Int) {
        var node = index
        for _ in 0..<4 {
            let client = HTTPClient(host: "127.0.0.1", port: ports[node], timeoutSeconds: timeout)
            defer { client.close() }
            let response = try client.request(method, target, headers: adminHeader, body: Array((body ?? "").utf8))
            if response.status == 307, let location = response.header("location"),
                let port = URL(string: location)?.port, let next = self.index(ofPort: port)
            {
                node = next
                continue
            }
            let json = response.body.isEmpty ? nil : try? JSONValue.parse(response.body)
            // A proxied answer names the node that gave it.
            if let owner = response.header("x-canopy-owner"), let port = URL(string: owner)?.port,
                let answered = self.index(ofPort: port)
            {
                node = answered
            }
            return (response.status, json, node)
        }
        throw HTTPClientError("redirected more than 3 times: \(method) \(target)")
    }

    /// The node that owns `ns`, asking node `index` (a GET that is answered there or redirected to the owner).
    func owner(of ns: String, asking index: Int = 0) throws -> Int {
        let client = HTTPClient(host: "127.0.0.1", port: ports[index], timeoutSeconds: 10)
        defer { client.close() }
        let response = try client.request("GET", "/.json?ns=\(ns)&shallow=true", headers: adminHeader)
        for header in ["location", "x-canopy-owner"] {
            if let url = response.header(header), let port = URL(string: url)?.port, let owner = self.index(ofPort: port) {
                return owner
            }
        }
        guard response.status == 200 else { throw HTTPClientError("GET on c\(index + 1): \(response.status) \(response.text)") }
        return index
    }
}
