// NamespaceLog -- the owner's side of one namespace's replicated log (Cluster.md#What-is-replicated).
//
// One append at a time, in order (the batches flushed while one is in flight go together into the next message):
// each names the sequence the previous one got
// (`Nats-Expected-Last-Subject-Sequence`), so once another node's takeover marker is in the log every append of
// this node is refused (the fence) and the namespace is deposed here. An append that meets no answer (a NATS
// server lost, a stream leader being elected) is retried with the same `Nats-Msg-Id`, so it is stored once,
// for as long as this node's lease is valid.
//
// It also keeps the namespace's state as the log holds it (`ReplayedLog`: each stored batch applied to a tree of
// its own, on the log's queue), so that every `snapshotBatches` messages or `snapshotBytes` bytes it can hand the
// snapshot queue that tree at the sequence just stored: an immutable value, taken in O(1) between two appends,
// consistent with the log whatever the namespace's own tree holds meanwhile (writes not yet stored, or that
// failed). Neither the loop nor the appends wait for the snapshot (Cluster.md#Snapshots).

import CanopyCore
import CanopyNATS
import Dispatch
import Synchronization

/// What a log message changes, applied to the log's own copy of the state once it is stored.
enum LogChange: Sendable {
    case operations([CommittedOperation])
    case rules(String)
}

/// Why an append was not stored.
enum LogFailure: Error, CustomStringConvertible {
    /// Another node owns the namespace now (the fence refused the append), or this node's lease was lost.
    case deposed(String)
    /// NATS did not store it in time, or refused it (too large); the namespace stays owned.
    case failed(String)

    var description: String {
        switch self {
        case .deposed(let reason): "no longer the owner: \(reason)"
        case .failed(let reason): reason
        }
    }
}

final class NamespaceLog: @unchecked Sendable {
    // safe: `state`, `counter` and `snapshotting` are touched only on `queue`; `deposedReason` and the handler
    // are behind mutexes.
    unowned let node: ClusterNode
    let namespace: String
    let stream: String
    let subject: String
    /// The owner record's revision when this node claimed the namespace.
    let epoch: UInt64
    private let queue: DispatchQueue
    /// The namespace as the log holds it through `state.applied`, the sequence the next append is fenced on.
    private var state: ReplayedLog
    private var counter: UInt64 = 0
    /// A snapshot is being written (at most one at a time per namespace).
    private var snapshotting = false
    private let deposedReason = Mutex<String?>(nil)
    /// Called once (on a cluster thread) when the namespace is deposed here.
    private let onDeposedHandler = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// How long an append is retried while NATS does not answer (a stream leader election takes 4.6–6.2 s).
    static let retryNanoseconds: UInt64 = 12_000_000_000

    init(node: ClusterNode, namespace: String, stream: String, subject: String, epoch: UInt64, state: ReplayedLog) {
        self.node = node
        self.namespace = namespace
        self.stream = stream
        self.subject = subject
        self.epoch = epoch
        self.state = state
        queue = DispatchQueue(label: "canopy.cluster.log." + namespace)
    }

    var isDeposed: Bool { deposedReason.withLock { $0 != nil } }

    func onDeposed(_ handler: @escaping @Sendable (String) -> Void) {
        onDeposedHandler.withLock { $0 = handler }
    }

    /// An append waiting for the one in flight: a batch's operations, or a message of its own (rules).
    private struct PendingAppend: Sendable {
        enum Content: Sendable {
            case operations([CommittedOperation])
            case message([UInt8], LogChange)
        }
        var content: Content
        var then: @Sendable (Result<UInt64, LogFailure>) -> Void
        var isOperations: Bool {
            if case .operations = content { return true }
            return false
        }
    }
    /// Appends not yet started, in order (any thread adds; the log's queue takes them).
    private let pending = Mutex<[PendingAppend]>([])

    /// Appends a batch's operations after everything appended before; `then` runs on the log's queue, in append
    /// order, with the stored sequence or why it was not stored. The batches that arrive while an append is in
    /// flight are stored together as one message once it completes: one round trip to the log for all of them,
    /// where each used to wait for every one before it (each `then` still runs, in order, with that message's
    /// result).
    func append(operations: [CommittedOperation], then: @escaping @Sendable (Result<UInt64, LogFailure>) -> Void) {
        enqueue(PendingAppend(content: .operations(operations), then: then))
    }

    /// Appends `payload` (which encodes `change`) as a message of its own after everything appended before;
    /// `then` as for `append(operations:then:)`.
    func append(
        _ payload: [UInt8], change: LogChange, then: @escaping @Sendable (Result<UInt64, LogFailure>) -> Void
    ) {
        enqueue(PendingAppend(content: .message(payload, change), then: then))
    }

    private func enqueue(_ append: PendingAppend) {
        let first = pending.withLock { list -> Bool in
            list.append(append)
            return list.count == 1
        }
        if first { queue.async { [self] in appendPending() } }
    }

    /// Stores what is pending, in order: each run of batches as one message, each other message alone.
    private func appendPending() {
        while true {
            let group: [PendingAppend] = pending.withLock { list in
                guard let first = list.first else { return [] }
                let count = first.isOperations ? list.prefix(while: \.isOperations).count : 1
                defer { list.removeFirst(count) }
                return Array(list.prefix(count))
            }
            guard let first = group.first else { return }
            let payload: [UInt8]
            let change: LogChange
            if case .message(let bytes, let what) = first.content {
                payload = bytes
                change = what
            } else {
                let operations = group.flatMap { append -> [CommittedOperation] in
                    if case .operations(let operations) = append.content { return operations }
                    return []
                }
                payload = ClusterBatch.encode(operations)
                change = .operations(operations)
            }
            let result = appendNow(payload)
            // The writers first; the log's own tree follows before the next append starts.
            for append in group { append.then(result) }
            if case .success(let sequence) = result { stored(change, sequence: sequence, bytes: payload.count) }
        }
    }

    /// A message is in the log: the log's state follows it, and a snapshot starts when one is due.
    private func stored(_ change: LogChange, sequence: UInt64, bytes: Int) {
        switch change {
        case .operations(let operations):
            var tree = state.tree
            for operation in operations {
                tree = Namespace.applying(operation.paths.map { ($0, operation.root.node(at: $0)) }, to: tree)
            }
            state.tree = tree
        case .rules(let source): state.rules = source
        }
        state.applied = sequence
        state.messages += 1
        state.bytes += bytes
        let policy = node.configuration
        let due =
            (policy.snapshotBatches > 0 && state.messages >= policy.snapshotBatches)
            || (policy.snapshotBytes > 0 && state.bytes >= policy.snapshotBytes)
        guard due, !snapshotting else { return }
        snapshotting = true
        let snapshot = ClusterSnapshot(namespace: namespace, sequence: sequence, rules: state.rules, tree: state.tree)
        let kept = state.snapshot
        state.messages = 0
        state.bytes = 0
        node.snapshotQueue.async { [self] in
            let written = node.writeSnapshot(snapshot, keeping: kept, for: self)
            queue.async { [self] in
                snapshotting = false
                if let written { state.snapshot = written }
            }
        }
    }

    /// Stores `payload` in the log, as one message or, past the servers' `max_payload`, as consecutive parts
    /// (`BatchParts`); the sequence of its last message.
    private func appendNow(_ payload: [UInt8]) -> Result<UInt64, LogFailure> {
        if let reason = deposedReason.withLock({ $0 }) { return .failure(.deposed(reason)) }
        counter += 1
        let id = "\(node.name).\(epoch).\(counter)"
        let parts = BatchParts.split(payload, limit: node.js.connection.maxPayload - BatchParts.headerRoom)
        var last = state.applied
        for (index, part) in parts.enumerated() {
            var headers = NATSHeaders()
            headers.set("Canopy-Epoch", String(epoch))
            var messageID = id
            if parts.count > 1 {
                headers.set(BatchParts.partHeader, BatchParts.label(index, of: parts.count))
                headers.set(BatchParts.batchHeader, id)
                messageID = id + ".p\(index)"
            }
            switch appendMessage(part, id: messageID, headers: headers, after: last) {
            case .success(let sequence):
                last = sequence
            case .failure(let failure):
                // The parts stored so far stay in the log, a batch never completed that readers drop; the next
                // append is fenced after them. The tree as the log holds it is unchanged.
                state.applied = last
                return .failure(failure)
            }
        }
        return .success(last)
    }

    /// Appends one message fenced on `last`, retrying with its message id while NATS does not answer.
    private func appendMessage(_ payload: ArraySlice<UInt8>, id: String, headers: NATSHeaders, after last: UInt64)
        -> Result<UInt64, LogFailure>
    {
        let options = JetStreamPublishOptions(
            messageID: id, expectedLastSubjectSequence: last, expectedStream: stream, headers: headers)
        let deadline = monotonicNanoseconds() + Self.retryNanoseconds
        var lastError = ""
        while true {
            // Local expiry: past its lease a node must not act as owner, whatever NATS would still accept.
            guard node.leaseIsValid else {
                return .failure(.failed("this node's cluster lease is not valid; the write was not stored"))
            }
            do {
                let ack = try node.js.publish(subject, payload: payload, options: options)
                return .success(ack.sequence)
            } catch let error as JetStreamError where error.isWrongLastSequence {
                let reason = "another node appended to the log of '\(namespace)' (fenced at sequence \(last))"
                depose(reason: reason)
                return .failure(.deposed(reason))
            } catch NATSError.payloadTooLarge(let size, let maximum) {
                return .failure(
                    .failed("a message of \(size) bytes exceeds the NATS servers' max_payload (\(maximum))"))
            } catch {
                lastError = "\(error)"
            }
            guard monotonicNanoseconds() < deadline else {
                return .failure(.failed("the log did not store the batch in time: \(lastError)"))
            }
            usleep(100_000)
        }
    }

    /// Stops owning: every later append fails, and the daemon is told once.
    func depose(reason: String) {
        let first = deposedReason.withLock { current -> Bool in
            guard current == nil else { return false }
            current = reason
            return true
        }
        guard first else { return }
        node.released(self)
        onDeposedHandler.withLock { $0 }?(reason)
    }

    /// The daemon closed the namespace: appends stop (without telling the daemon, which knows).
    func close() {
        deposedReason.withLock { current in
            if current == nil { current = "closed" }
        }
    }
}

#if canImport(Glibc)
    import Glibc
#endif
