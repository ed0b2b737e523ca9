// Transaction -- runTransaction: compare-and-set on the server, rerun on `datastale`, at most 25 attempts.

import CanopyCore

/// What a transaction's update function decides.
public enum TransactionResult: Sendable {
    /// Write this value (it may contain server values).
    case success(JSONValue)
    /// Leave the location unchanged and end the transaction uncommitted.
    case abort
}

extension DatabaseReference {
    /// The most attempts a transaction makes (Firebase's limit).
    public static let maxTransactionAttempts = 25

    /// Runs `update` on the current value and writes its result only if the server still holds that value;
    /// otherwise reruns it with the fresh value.
    ///
    /// The location is listened to while the transaction runs. Connected, each attempt runs on data the server
    /// confirmed; offline, on the data held from the cache (with none, it waits for the server). Each attempt's result is applied
    /// locally at once (optimistically) and rolled back if the attempt fails; offline, the compare-and-set is
    /// sent after the next handshake, behind the re-listen, so a stale cache costs one `datastale` rerun.
    /// - Returns: whether it committed, and the value after it.
    /// - Throws: `ClientError.maxRetries` after 25 stale attempts, `.disconnected` when the connection dropped
    ///   while an attempt was in flight (it may have applied), `.permissionDenied` and other rejections.
    public func runTransaction(
        _ update: @Sendable (JSONValue) -> TransactionResult
    ) async throws -> (committed: Bool, snapshot: DataSnapshot) {
        let key = ListenKey(path: location, query: nil)
        core.sync { core.retain(key) }
        defer { core.queue.async { [core] in core.release(key) } }
        for _ in 0..<Self.maxTransactionAttempts {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                core.queue.async { [core] in core.whenKnown(key, continuation) }
            }
            let base = core.sync { core.transactionBase(location) }
            guard case .success(let value) = update(base.json(export: false)) else {
                return (false, DataSnapshot(path: location, node: base, spec: .default, fromCache: false))
            }
            let attempt = await withCheckedContinuation { (continuation: CheckedContinuation<TransactionAttempt, Never>) in
                core.queue.async { [core, location] in
                    core.commitTransaction(at: location, base: base, value: value) { continuation.resume(returning: $0) }
                }
            }
            switch attempt {
            case .committed:
                let node = core.sync { core.transactionBase(location) }
                return (true, DataSnapshot(path: location, node: node, spec: .default, fromCache: false))
            case .stale:
                continue
            case .failed(let error):
                throw error
            }
        }
        throw ClientError.maxRetries(path: location.description)
    }
}
