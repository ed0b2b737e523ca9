// NamespacesBenchmark -- `canopy bench namespaces`: what thousands of open, then idle, namespaces cost a daemon.
//
// Starts a daemon as a child process, creates `--count` namespaces of about `--nodes` leaves each (one PUT each,
// from 8 clients), then reads the daemon's threads (/proc/PID/status), resident memory (VmRSS) and open
// descriptors (/proc/PID/fd) right after, and again after `--idle` seconds without requests. `--server` runs
// another `canopy` binary, `--serve-option` passes options to it (e.g. `--serve-option --namespace-idle=5`).

import CanopyCore
import CanopyNet
import Foundation
import Synchronization

/// `canopy bench namespaces [--count N] [--nodes N] [--idle S] [--server <binary>] [--serve-option <opt>]...`.
struct NamespacesBenchmark {
    var count = 5000
    var nodes = 100
    var idleSeconds = 15
    var binary: String?
    var serveOptions: [String] = []

    init(parsing arguments: inout Arguments) throws(UsageError) {
        while let option = try arguments.nextOption() {
            switch option {
            case "--count": count = try arguments.int(for: option, in: 1...1_000_000)
            case "--nodes": nodes = try arguments.int(for: option, in: 1...100_000)
            case "--idle": idleSeconds = try arguments.int(for: option, in: 0...3600)
            case "--server": binary = try arguments.value(for: option)
            case "--serve-option":
                serveOptions += try arguments.value(for: option).split(separator: "=", maxSplits: 1).map(String.init)
            default: throw .unknownOption(option, command: "bench namespaces")
            }
        }
    }

    func run() throws {
        let server = try PublishBenchServer(namespace: "n0", binary: binary, arguments: serveOptions)
        defer { server.stop() }
        let options = serveOptions.joined(separator: " ")
        print("canopy bench namespaces: \(count) namespaces x \(nodes) leaves; serve \(options)")
        print(Self.row("daemon started", pid: server.processID))
        let start = benchNow()
        let next = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let body: JSONValue = .object((0..<nodes).map { JSONMember("n\($0)", .string("value \($0)")) })
        let bytes = Array(body.serialized().utf8)
        let headers = [("Authorization", "Bearer \(server.adminCredential)"), ("Content-Type", "application/json")]
        let done = DispatchGroup()
        for _ in 0..<8 {
            done.enter()
            Thread { [count, port = server.port] in
                let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 120)
                while true {
                    let index = next.add(1, ordering: .relaxed).oldValue
                    guard index < count else { break }
                    let response = try? client.request(
                        "PUT", "/data.json?print=silent&ns=n\(index)", headers: headers, body: bytes)
                    if response?.status != 204 && response?.status != 200 { failures.add(1, ordering: .relaxed) }
                }
                client.close()
                done.leave()
            }.start()
        }
        done.wait()
        let seconds = Double(benchNow() - start) / 1e9
        let failed = failures.load(ordering: .relaxed)
        print(String(format: "created %d namespaces in %.1f s (%d failed)", count, seconds, failed))
        print(Self.row("after creating", pid: server.processID))
        if idleSeconds > 0 {
            Thread.sleep(forTimeInterval: Double(idleSeconds))
            print(Self.row("after \(idleSeconds) s idle", pid: server.processID))
        }
        // One of them again: reopened on demand with its data.
        let client = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 60)
        let check = try client.request("GET", "/data/n1.json?ns=n\(count / 2)", headers: headers)
        client.close()
        print("namespace n\(count / 2) read back: \(check.status) \(check.text)")
        print(Self.row("after reading it", pid: server.processID))
    }

    private static func row(_ name: String, pid: Int32) -> String {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func field(_ key: String) -> String {
            status.split(separator: "\n").first { $0.hasPrefix(key + ":") }.map {
                $0.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces)
            } ?? "?"
        }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
        let label = name.padding(toLength: 22, withPad: " ", startingAt: 0)
        return "\(label) threads \(field("Threads"))   RSS \(field("VmRSS"))   open fds \(descriptors)"
    }
}
