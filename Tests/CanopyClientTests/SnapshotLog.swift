// SnapshotLog -- collects the snapshots of one observation for assertions.

import CanopyCore
import Synchronization

@testable import CanopyClient

final class SnapshotLog: Sendable {
    private let collected = Mutex<[DataSnapshot]>([])
    private let failure = Mutex<ClientError?>(nil)

    init(_ query: some DatabaseQueryable) {
        _ = query.observe(
            { [self] snapshot in self.collected.withLock { $0.append(snapshot) } },
            cancelled: { [self] error in self.failure.withLock { $0 = error } })
    }

    var snapshots: [DataSnapshot] { collected.withLock { $0 } }
    var values: [JSONValue] { snapshots.map(\.value) }
    var error: ClientError? { failure.withLock { $0 } }
}
