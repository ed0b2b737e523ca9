// ClusterFailover -- `canopy bench cluster`'s failover round: one writer keeps writing to a namespace while its
// owner is `kill -9`ed, and the time from the kill to the first write the new owner acknowledges is measured.
//
// The writer is a client as an application would write one: it sends `PUT /items/w<i>.json` (value i) with one
// write in flight, follows a 307 to the node it names (nodes started with `--cluster-rest redirect`, or an https
// owner), sending `Authorization` again itself, and on a refused connection, a timeout or any other answer (a
// proxying node's 502 while the owner is dead) moves to the next node (pausing 20 ms once three attempts in a row
// failed, so a dead owner's redirects do not spin). A write that was not acknowledged is sent again, to the same
// key. An acknowledgement is the owner's: the node written to, or the one a proxied answer names in
// `X-Canopy-Owner`. Every acknowledged write must be in the namespace afterwards, as the new owner serves it.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization

/// What the failover round measured.
struct ClusterFailoverResult {
    var killed: String
    var newOwner: String
    /// From just before the `kill -9` to the first acknowledgement by a node other than the killed one.
    var milliseconds: Double
    var acknowledgedBeforeKill: Int
    var acknowledged: Int
    /// Attempts that were not acknowledged after the kill: refused connections, timeouts, other answers.
    var failedAttempts: Int
    var redirects: Int
    /// Acknowledged writes that the new owner does not serve with their value.
    var missing: [Int]
}

/// The writer thread's record, shared with the thread that kills the owner.
private final class FailoverLog: Sendable {
    struct State {
        /// Acknowledged writes: the item, the port that acknowledged it, when (monotonic ns).
        var acknowledged: [(item: Int, port: Int, at: UInt64)] = []
        var killedAt: UInt64?
        var killedPort = 0
        var failedAfterKill = 0
        var redirectsAfterKill = 0
        var stop = false
    }
    let state = Mutex(State())

    /// Acknowledgements by another node than the killed one since the kill.
    func acknowledgedByOthersSinceKill() -> [(item: Int, port: Int, at: UInt64)] {
        state.withLock { s in
            guard let killedAt = s.killedAt else { return [] }
            return s.acknowledged.filter { $0.at >= killedAt && $0.port != s.killedPort }
        }
    }
}

extension BenchCluster {
    /// Runs the failover round on `namespace`: `before` writes acknowledged, the owner killed, then writes until
    /// `after` were acknowledged by the new owner (or `timeoutSeconds` after the kill: a failure).
    func measureFailover(namespace: String, before: Int, after: Int, timeoutSeconds: Double) throws
        -> ClusterFailoverResult
    {
        let ownerIndex = try owner(of: namespace)
        let log = FailoverLog()
        let ports = nodePorts
        let headers = authorization
        let done = DispatchSemaphore(value: 0)
        Thread {
            Self.write(namespace: namespace, startingAt: ports[ownerIndex], ports: ports, headers: headers, log: log)
            done.signal()
        }.start()
        var joined = false
        func join() {
            guard !joined else { return }
            log.state.withLock { $0.stop = true }
            done.wait()
            joined = true
        }
        defer { join() }
        func wait(until condition: () -> Bool, seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while !condition() {
                if Date() > deadline { return false }
                Thread.sleep(forTimeInterval: 0.005)
            }
            return true
        }
        guard wait(until: { log.state.withLock { $0.acknowledged.count } >= before }, seconds: 60) else {
            throw CommandFailure("the failover writer did not get \(before) writes acknowledged within 60 s")
        }
        let killedPort = ports[ownerIndex]
        log.state.withLock {
            $0.killedPort = killedPort
            $0.killedAt = monotonicNanoseconds()
        }
        kill9(node: ownerIndex)
        guard wait(until: { log.acknowledgedByOthersSinceKill().count >= after }, seconds: timeoutSeconds) else {
            throw CommandFailure(
                "no other node acknowledged \(after) writes within \(Int(timeoutSeconds)) s of killing "
                    + "\(Self.nodeNames[ownerIndex]) (\(log.acknowledgedByOthersSinceKill().count) acknowledged)\n"
                    + logTails())
        }
        join()

        let state = log.state.withLock { $0 }
        let sinceKill = log.acknowledgedByOthersSinceKill()
        guard let first = sinceKill.first, let killedAt = state.killedAt, let newIndex = nodeIndex(ofPort: first.port)
        else { throw CommandFailure("the failover writer recorded no acknowledgement after the kill") }
        let missing = try missingWrites(namespace: namespace, acknowledged: state.acknowledged.map(\.item),
            via: first.port)
        return ClusterFailoverResult(
            killed: Self.nodeNames[ownerIndex], newOwner: Self.nodeNames[newIndex],
            milliseconds: Double(first.at - killedAt) / 1e6,
            acknowledgedBeforeKill: state.acknowledged.filter { $0.at < killedAt }.count,
            acknowledged: state.acknowledged.count, failedAttempts: state.failedAfterKill,
            redirects: state.redirectsAfterKill, missing: missing)
    }

    /// The acknowledged items that the node on `port` (or the owner it redirects to) does not hold with their
    /// value.
    private func missingWrites(namespace: String, acknowledged: [Int], via port: Int) throws -> [Int] {
        let (response, _) = try request("GET", "/items.json?ns=\(namespace)", via: port, timeoutSeconds: 30)
        guard response.status == 200 else {
            throw CommandFailure("GET /items of \(namespace) after the failover answered \(response.status)")
        }
        var stored: [String: Int64] = [:]
        if case .object(let members) = try JSONValue.parse(response.body) {
            for member in members { stored[member.key] = member.value.int64Value }
        }
        return acknowledged.filter { stored[Self.failoverKey($0)] != Int64($0) }
    }

    static func failoverKey(_ item: Int) -> String { "w\(item)" }

    /// The writer thread's loop (see the file's header), until `log`'s `stop`.
    private static func write(
        namespace: String, startingAt start: Int, ports: [Int], headers: [(String, String)], log: FailoverLog
    ) {
        var port = start
        var clients: [Int: HTTPClient] = [:]
        var item = 0
        var failuresInARow = 0
        func failed(redirectedTo next: Int? = nil) {
            log.state.withLock { s in
                guard s.killedAt != nil else { return }
                if next == nil { s.failedAfterKill += 1 } else { s.redirectsAfterKill += 1 }
            }
            if let next {
                port = next
            } else {
                clients[port]?.close()
                clients[port] = nil
                port = ports[((ports.firstIndex(of: port) ?? 0) + 1) % ports.count]
            }
            failuresInARow += 1
            if failuresInARow >= 3 { Thread.sleep(forTimeInterval: 0.02) }
        }
        while !log.state.withLock({ $0.stop }) {
            let client = clients[port] ?? HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 5)
            clients[port] = client
            let response = try? client.request(
                "PUT", "/items/\(failoverKey(item)).json?ns=\(namespace)&print=silent", headers: headers,
                body: Array("\(item)".utf8))
            guard let response else {
                failed()
                continue
            }
            if (200..<300).contains(response.status) {
                let at = monotonicNanoseconds()
                let owner = BenchCluster.ownerPort(response) ?? port
                log.state.withLock { $0.acknowledged.append((item, owner, at)) }
                item += 1
                failuresInARow = 0
            } else if response.status == 307, let next = BenchCluster.redirectPort(response) {
                failed(redirectedTo: next)
            } else {
                failed()
            }
        }
        for client in clients.values { client.close() }
    }
}
