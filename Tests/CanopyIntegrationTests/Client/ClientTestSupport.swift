// ClientTestSupport -- helpers for CanopyClient tests against the real server: recorders and condition waits.

import CanopyClient
import CanopyCore
import Foundation
import Synchronization
import Testing

/// Records every snapshot (and the cancellation, if any) of one observation.
final class SnapshotRecorder: Sendable {
    private let snapshots = Mutex<[DataSnapshot]>([])
    private let failure = Mutex<ClientError?>(nil)
    private let handle = Mutex<ObservationHandle?>(nil)

    init(_ query: some DatabaseQueryable) {
        let observation = query.observe(
            { [self] snapshot in self.snapshots.withLock { $0.append(snapshot) } },
            cancelled: { [self] error in self.failure.withLock { $0 = error } })
        handle.withLock { $0 = observation }
    }

    var all: [DataSnapshot] { snapshots.withLock { $0 } }
    var values: [JSONValue] { all.map(\.value) }
    var last: JSONValue? { all.last?.value }
    var error: ClientError? { failure.withLock { $0 } }

    func cancel() { handle.withLock { $0?.cancel() } }
}

/// Polls `condition` until it holds or `timeout` seconds pass; returns whether it held.
@discardableResult
func eventually(timeout: Double = 10, _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return await condition()
}

/// Fast reconnects for tests.
let testOptions = DatabaseOptions(reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.3, multiplier: 2, stableAfter: 1))

func clientDatabase(
    port: Int, namespace: String, token: String?, cache: URL? = nil, options: DatabaseOptions = testOptions
) throws -> Database {
    try Database(url: URL(string: "http://127.0.0.1:\(port)")!, namespace: namespace, token: token, cacheDirectory: cache, options: options)
}

/// A rules file (in a fresh temp dir) with the given JSON text.
func writeRules(_ text: String) -> String {
    let path = makeTemporaryDirectory() + "/rules.json"
    try? text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}
