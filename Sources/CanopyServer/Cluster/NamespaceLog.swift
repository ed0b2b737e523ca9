// NamespaceLog -- the owner's side of one namespace's replicated log (Cluster.md#What-is-replicated).
//
// One append at a time, in order: each names the sequence the previous one got
// (`Nats-Expected-Last-Subject-Sequence`), so once another node's takeover marker is in the log every append of
// this node is refused (the fence) and the namespace is deposed here. An append that meets no answer (a NATS
// server lost, a stream leader being elected) is retried with the same `Nats-Msg-Id`, so it is stored once,
// for as long as this node's lease is valid.

import CanopyCore
import CanopyNATS
import Dispatch
import Synchronization

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
    // safe: `last` and `counter` are touched only on `queue`; `deposedReason` is behind a mutex.
    unowned let node: ClusterNode
    let namespace: String
    let stream: String
    let subject: String
    /// The owner record's revision when this node claimed the namespace.
    let epoch: UInt64
    private let queue: DispatchQueue
    private var last: UInt64
    private var counter: UInt64 = 0
    private let deposedReason = Mutex<String?>(nil)
    /// Called once (on a cluster thread) when the namespace is deposed here.
    private let onDeposedHandler = Mutex<(@Sendable (String) -> Void)?>(nil)
    /// How long an append is retried while NATS does not answer (a stream leader election takes 4.6–6.2 s).
    static let retryNanoseconds: UInt64 = 12_000_000_000

    init(node: ClusterNode, namespace: String, stream: String, subject: String, epoch: UInt64, last: UInt64) {
        self.node = node
        self.namespace = namespace
        self.stream = stream
        self.subject = subject
        self.epoch = epoch
        self.last = last
        queue = DispatchQueue(label: "canopy.cluster.log." + namespace)
    }

    var isDeposed: Bool { deposedReason.withLock { $0 != nil } }

    func onDeposed(_ handler: @escaping @Sendable (String) -> Void) {
        onDeposedHandler.withLock { $0 = handler }
    }

    /// Appends `payload` after everything appended before; `then` runs on the log's queue, in append order,
    /// with the stored sequence or why it was not stored.
    func append(_ payload: [UInt8], then: @escaping @Sendable (Result<UInt64, LogFailure>) -> Void) {
        queue.async { [self] in then(appendNow(payload)) }
    }

    private func appendNow(_ payload: [UInt8]) -> Result<UInt64, LogFailure> {
        if let reason = deposedReason.withLock({ $0 }) { return .failure(.deposed(reason)) }
        counter += 1
        let id = "\(node.name).\(epoch).\(counter)"
        var headers = NATSHeaders()
        headers.set("Canopy-Epoch", String(epoch))
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
                last = ack.sequence
                return .success(ack.sequence)
            } catch let error as JetStreamError where error.isWrongLastSequence {
                let reason = "another node appended to the log of '\(namespace)' (fenced at sequence \(last))"
                depose(reason: reason)
                return .failure(.deposed(reason))
            } catch NATSError.payloadTooLarge(let size, let maximum) {
                return .failure(
                    .failed("a batch of \(size) bytes exceeds the NATS servers' max_payload (\(maximum))"))
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
