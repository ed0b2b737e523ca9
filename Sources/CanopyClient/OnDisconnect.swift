// OnDisconnect -- writes the server applies when this client's connection ends (presence, cleanup).

import CanopyCore

/// Operations registered on the server for when the connection ends (`o`, `om`, `oc`).
///
/// The server checks rules when an operation is registered; each call returns once the server accepted it
/// (or throws why not). Registrations belong to one connection: re-register after every reconnect (for example
/// when `.info/connected` becomes true). Made while offline, they are sent after the next handshake.
public struct OnDisconnect: Sendable {
    let database: Database
    let location: Path
    var core: SyncCore { database.core }

    /// Sets the value here when the connection ends.
    public func setValue(_ value: JSONValue) async throws { try await run(Wire.Action.onDisconnectPut, value) }

    /// Sets several relative paths here when the connection ends.
    public func updateChildValues(_ values: [String: JSONValue]) async throws {
        let members = values.sorted { $0.key < $1.key }.map { JSONMember($0.key, $0.value) }
        try await run(Wire.Action.onDisconnectMerge, .object(members))
    }

    /// Deletes the value here when the connection ends.
    public func removeValue() async throws { try await run(Wire.Action.onDisconnectPut, .null) }

    /// Cancels the operations registered here and below.
    public func cancel() async throws { try await run(Wire.Action.onDisconnectCancel, .null) }

    private func run(_ action: String, _ data: JSONValue) async throws {
        let error = await withCheckedContinuation { (continuation: CheckedContinuation<ClientError?, Never>) in
            core.queue.async { [core, location] in
                core.onDisconnectRequest(action, at: location, data: data) { continuation.resume(returning: $0) }
            }
        }
        if let error { throw error }
    }
}
