// NamespaceReplica -- a non-owner serving a namespace from its log (Cluster.md#Writes-at-a-replica, `--replicate`).
//
// A node that does not own a namespace may hold a replica of it: its tree read from the log, then kept current by
// an ordered consumer that hands every batch to the loop, where it is applied and fanned out to the replica's own
// listeners exactly as a commit is on the owner. Reads and listens are answered from the replica's tree. Writes are
// forwarded to the owner over its REST API, as the writer (the admin credential with `auth_variable_override`,
// so the owner's rules judge the writer's identity against the owner's current tree), and acknowledged only once
// the replica has applied the log up to the owner's answer: the writer's own listeners here see the change before
// its acknowledgement, the order Firebase clients rely on.

import CanopyCore
import CanopyNATS
import CanopyNet
import Dispatch
import Synchronization

/// The log-following side of a replica. Its reader thread delivers batches to the namespace on the loop.
final class NamespaceReplica: @unchecked Sendable {
    // safe: `applied` and `waiters` are loop-confined (read and written only in loop callbacks); the rest is
    // immutable or thread-safe.
    let namespace: String
    let stream: String
    let subject: String
    unowned let node: ClusterNode
    private let stopped = Atomic<Bool>(false)
    /// The last log sequence applied to the tree (loop only).
    var applied: UInt64
    /// Writers waiting for the tree to reach a sequence (loop only).
    var waiters: [(sequence: UInt64, run: () -> Void)] = []
    /// The owner's advertised URL as read after the last takeover marker in the log (nil before one): where REST
    /// requests other than reads are sent. Without it a replica kept sending them to an owner that had died.
    let currentOwnerURL = Mutex<String?>(nil)

    init(node: ClusterNode, namespace: String, stream: String, subject: String, applied: UInt64) {
        self.node = node
        self.namespace = namespace
        self.stream = stream
        self.subject = subject
        self.applied = applied
    }

    /// Follows the log from after `applied`; `deliver` runs on the reader thread for each message, in order.
    func start(_ deliver: @escaping @Sendable (UInt64, ClusterBatch) -> Void, failed: @escaping @Sendable (String) -> Void) {
        let from = applied + 1
        DispatchQueue(label: "canopy.cluster.replica." + namespace).async { [self] in
            do {
                let consumer = try JetStreamOrderedConsumer(
                    node.js, stream: stream, filterSubject: subject, start: .sequence(from), heartbeat: .seconds(1))
                defer { consumer.stop() }
                var seen = from - 1
                var parts = BatchAssembler()
                while !stopped.load(ordering: .relaxed) {
                    guard let message = consumer.next(timeout: .milliseconds(500)) else { continue }
                    guard message.streamSequence > seen else { continue }
                    // A message that does not follow the one applied before it: the log was trimmed past this
                    // replica (it lagged by more than a snapshot interval). It is dropped, and reloaded from the
                    // newest snapshot by the next request, rather than serve a tree with a hole.
                    try ClusterNode.checkChain(
                        message.headers, sequence: message.streamSequence, after: seen, subject: subject)
                    seen = message.streamSequence
                    // A part that is not a batch's last is delivered as an empty batch: the replica's tree
                    // changes only with the whole batch, and writers waiting for this sequence still go on.
                    let batch = try parts.take(headers: message.headers, payload: message.payload)
                    if case .takeover = batch, let url = try? node.ownerURL(of: namespace) {
                        currentOwnerURL.withLock { $0 = url }
                    }
                    deliver(seen, batch)
                }
            } catch {
                if !stopped.load(ordering: .relaxed) { failed("\(error)") }
            }
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    /// Runs `body` once the tree holds the log up to `sequence` (at once if it does). Loop only.
    func whenApplied(_ sequence: UInt64, _ body: @escaping () -> Void) {
        if applied >= sequence { return body() }
        waiters.append((sequence, body))
    }

    /// The tree reached `sequence`: the writers waiting for it go on. Loop only.
    func reached(_ sequence: UInt64) {
        applied = sequence
        guard waiters.contains(where: { $0.sequence <= sequence }) else { return }
        let ready = waiters.filter { $0.sequence <= sequence }
        waiters.removeAll { $0.sequence <= sequence }
        for waiter in ready { waiter.run() }
    }
}

extension Namespace {
    /// Applies a batch read from the log to a replica's tree and fans it out (a rules message replaces the rules).
    func applyReplicated(_ batch: ClusterBatch, sequence: UInt64) {
        loop.assertInLoop()
        guard let replica, !isDeposed else { return }
        switch batch {
        case .operations(let operations):
            let before = root
            var current = root
            var committed: [CommittedOperation] = []
            for operation in operations {
                current = Namespace.applying(operation.writes.map { ($0.path, $0.node) }, to: current)
                committed.append(
                    CommittedOperation(paths: operation.writes.map(\.path), root: current, mergeBase: operation.mergeBase))
            }
            if !committed.isEmpty {
                replaceRoot(with: current)
                onCommit?(before, committed)
            }
        case .rules(let source):
            onReplicatedRules?(source)
        case .takeover:
            break
        }
        replica.reached(sequence)
    }

    /// A replica's write: sent to the owner as the writer, answered once this replica applied it.
    func forwardToOwner(
        _ operation: WriteOperation, as identity: Identity, condition: WriteCondition?,
        _ completion: @escaping (Result<WriteReceipt, WriteError>) -> Void
    ) {
        guard let forwarder else { return completion(.failure(.storageFailed)) }
        let method: String
        let data: JSONValue
        switch operation {
        case .set(_, let value):
            method = "PUT"
            data = value
        case .update(_, let value):
            method = "PATCH"
            data = value
        case .admin:
            return completion(.failure(.invalidData("Publish-engine actions are performed by the namespace's owner.")))
        }
        var target = operation.path.segments.map(Self.percentEncoded).joined(separator: "/")
        target = "/" + target + ".json?ns=" + Self.percentEncoded(name)
        switch identity {
        case .admin: break
        case .anonymous: target += "&auth_variable_override=null"
        case .user(let auth, _): target += "&auth_variable_override=" + Self.percentEncoded(auth.serialized())
        }
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        switch condition {
        case .etag(let etag, _)?: headers.append(("If-Match", etag))
        case .hash(let hash, _)?: headers.append((ClusterProxy.hashConditionHeader, hash))
        case nil: break
        }
        var body: [UInt8] = []
        data.write(into: &body)
        let path = operation.path
        let before = root
        let bound = LoopBound(self, loop: loop)
        let reply = LoopHeld(completion, loop: loop)
        let loop = self.loop
        forwarder(method, target, headers, body) { outcome in
            loop.execute {
                let completion = reply.value
                switch outcome {
                case .stored(let sequence):
                    guard let namespace = bound.value, let replica = namespace.replica else {
                        return completion(.failure(.storageFailed))
                    }
                    replica.whenApplied(sequence) {
                        let built = BuiltWrite(
                            writes: [], newRoot: namespace.root, access: .write, path: path, mergeBase: nil,
                            resolved: .null)
                        completion(.success(WriteReceipt(before: before, built: built)))
                    }
                case .ownerUnavailable(let reason):
                    // Not the write's fault, and maybe not final: the owner died or is being replaced. Failing it
                    // would make the client drop it (a Firebase SDK takes a failure as final); the sessions are
                    // reset instead (before this answer, which then reaches no one), so their clients reconnect
                    // and resend every unacknowledged write, as the owner's own clients do when it is fenced.
                    bound.value?.onOwnerUnavailable?(reason)
                    completion(.failure(.storageFailed))
                case .refused(let status, let message, let current):
                    switch status {
                    case 401, 403: completion(.failure(.permissionDenied(reason: "the owner refused: \(message)")))
                    case 412:
                        let node = (try? Node.from(json: current ?? .null)) ?? .empty
                        completion(.failure(.conditionFailed(current: node, at: path)))
                    case 400..<500: completion(.failure(.invalidData(message)))
                    default: completion(.failure(.storageFailed))
                    }
                }
            }
        }
    }

    /// One path segment or query value, percent-encoded (everything but RFC 3986's unreserved characters).
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out.unicodeScalars.append(Unicode.Scalar(0x25))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 15)]))
            }
        }
        return out
    }
}

/// What the owner answered a forwarded write.
enum ForwardOutcome: Sendable {
    /// Stored: the log holds it at or before this sequence.
    case stored(UInt64)
    /// Refused (or failed) with this HTTP status, message and, for 412, the current value.
    case refused(status: Int, message: String, current: JSONValue?)
    /// Not answered: no live owner, no answer from it, or its 503 (past its lease, the namespace moving).
    case ownerUnavailable(String)
}

/// Sends a forwarded write to the owner: method, target, headers, body; answers off the loop.
typealias ReplicaForwarder = @Sendable (
    String, String, [(String, String)], [UInt8], @escaping @Sendable (ForwardOutcome) -> Void
) -> Void
