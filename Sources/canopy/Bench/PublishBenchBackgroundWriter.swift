// PublishBenchBackgroundWriter -- `bench publish --background-writes N`: the event's other traffic while it publishes.
//
// A live event is written while the organiser publishes: a chat, presence, the attendees' own data. This writer
// PUTs a small value N times a second, paced on an absolute schedule, to `bench/background/<k>` of the event (a
// place the publish engine does not read) from its own keep-alive connection, until stopped.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization

/// Paced admin PUTs outside the event's content model, on a thread of their own.
final class PublishBenchBackgroundWriter: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private let counts = Mutex<(written: Int, failed: Int, firstError: String?)>((0, 0, nil))
    let perSecond: Int

    /// Starts writing `perSecond` values a second to the daemon of `server`.
    init(perSecond: Int, server: PublishBenchServer) {
        self.perSecond = perSecond
        let (port, credential, namespace) = (server.port, server.adminCredential, server.namespace)
        Thread { [self] in
            let client = HTTPClient(host: "127.0.0.1", port: port, timeoutSeconds: 30)
            let start = benchNow()
            var k = 0
            while !stopping.load(ordering: .relaxed) {
                k += 1
                let due = start + UInt64(k) * 1_000_000_000 / UInt64(perSecond)
                let now = benchNow()
                if due > now { usleep(useconds_t((due - now) / 1_000)) }
                let target = "/bench/background/w\(k % 1000).json?print=silent&ns=\(namespace)"
                // nil once the write was acknowledged, else why not.
                let problem: String?
                do {
                    let answer = try client.request(
                        "PUT", target, headers: [("Authorization", "Bearer \(credential)")], body: Array("\(k)".utf8))
                    problem = (200..<300).contains(answer.status) ? nil : "\(answer.status): \(answer.text)"
                } catch {
                    problem = "\(error)"
                }
                counts.withLock { counts in
                    if let problem {
                        counts.failed += 1
                        if counts.firstError == nil { counts.firstError = problem }
                    } else {
                        counts.written += 1
                    }
                }
            }
            done.signal()
        }.start()
    }

    /// Stops writing and returns a line for the report.
    func stop() -> String {
        stopping.store(true, ordering: .relaxed)
        _ = done.wait(timeout: .now() + 30)
        let (written, failed, firstError) = counts.withLock { $0 }
        return "background writes: \(written) acknowledged at \(perSecond)/s to bench/background while the rows "
            + "above were measured, \(failed) failed" + (firstError.map { " (first: \($0.prefix(200)))" } ?? "")
    }
}
