// Namespace+Perform -- the one write pipeline: build the new tree, authorize it through the namespace's policy,
// commit it, and answer once it is durable.
//
//   perform(operation, as: identity)
//     1. admin actions: the policy decides `.admin(action)` first (no engine output reaches a non-admin);
//     2. build: WriteBuilder turns the operation into disjoint tree writes against `root` (server values,
//        validation, the publish engine) — `.invalidData` / `.publish` on failure;
//     3. condition (if-match ETag, transaction hash): when it fails the caller gets `.conditionFailed` with the
//        current node, after the writes before it are durable — and only if the identity may read that node;
//     4. data writes: the policy decides `.write` / `.update` on the old and the new tree;
//     5. commit (`Namespace.commit`, which takes only an `AuthorizedWrite`, made nowhere but here);
//        an admin action's steps 2–3 run on the compute thread instead (`performOffLoop`), and it is committed
//        only if the tree did not change meanwhile, or changed only where the engine reads nothing (`rebase`);
//     6. answer from `whenDurable`: `.success(receipt)` or `.storageFailed`.
//
// Because `AuthorizedWrite` can only be made in this file, and only from an allowing decision, no front end can
// reach the store without a policy decision: that is the README's "one authorization seam", by construction.

import CanopyCore
import CanopyPublish
import CanopyStore

/// Tree writes that the policy allowed. Only `Namespace.perform` (this file) makes them.
struct AuthorizedWrite {
    /// The writes as built (held, not copied: a write's path is the hot path of the daemon).
    let built: BuiltWrite
    let decision: AccessDecision
    /// Whether the store writer makes its rows while it writes them (`PublishRows`), rather than the loop now: an
    /// admin action's thousands of writes.
    let rowsByWriter: Bool

    var writes: [(path: Path, node: Node)] { built.writes }
    var newRoot: Node { built.newRoot }
    var mergeBase: Path? { built.mergeBase }

    fileprivate init(_ built: BuiltWrite, decision: AccessDecision, rowsByWriter: Bool = false) {
        precondition(decision.allowed, "only an allowing decision authorizes a write")
        self.built = built
        self.decision = decision
        self.rowsByWriter = rowsByWriter
    }
}

extension Namespace {
    /// Performs one write for `identity`, answering `completion` on the loop.
    ///
    /// Refusals (invalid data, permission denied) are answered before this returns; a failed condition once the
    /// writes before it are durable; a committed write once it is durable (`.success`) or failed to persist
    /// (`.storageFailed`, and the tree goes back).
    /// - Parameters:
    ///   - operation: what to write.
    ///   - identity: who writes; the policy judges this identity.
    ///   - now: server time of the write (server values, rules' `now`, publish history), in ms.
    ///   - condition: a precondition on the tree (REST `if-match`, a wire transaction's hash).
    public func perform(
        _ operation: WriteOperation, as identity: Identity, now: Int64, condition: WriteCondition? = nil,
        _ completion: @escaping (Result<WriteReceipt, WriteError>) -> Void
    ) {
        if let beforeWrite { beforeWrite() }
        let completion = counting(operation, completion)
        if replica != nil { return forwardToOwner(operation, as: identity, condition: condition, completion) }
        if case .admin = operation, let offLoop {
            performOffLoop(operation, as: identity, now: now, condition: condition, on: offLoop, attempt: 1, completion)
            return
        }
        let before = root
        let authorized: AuthorizedWrite
        switch prepare(operation, as: identity, now: now, condition: condition) {
        case .failure(.conditionFailed(let current, let path)):
            whenDurable { _ in completion(.failure(.conditionFailed(current: current, at: path))) }
            return
        case .failure(let error):
            completion(.failure(error))
            return
        case .success(let prepared):
            authorized = prepared
        }
        commit(authorized)
        let receipt = WriteReceipt(before: before, built: authorized.built)
        whenDurable { ok in completion(ok ? .success(receipt) : .failure(.storageFailed)) }
    }

    /// Builds and authorizes `operation` without committing it: nil when `perform` would commit it now.
    /// (onDisconnect operations are checked when they are queued, and performed when the socket goes.)
    public func check(_ operation: WriteOperation, as identity: Identity, now: Int64) -> WriteError? {
        switch prepare(operation, as: identity, now: now, condition: nil) {
        case .failure(let error): error
        case .success: nil
        }
    }

    /// Whether `identity` may run the admin action or read endpoint `action` on this namespace.
    public func authorizeAdmin(_ action: String, as identity: Identity, now: Int64) -> AccessDecision {
        counted(
            policy.authorize(.admin(action), at: .root, as: identity, in: name, old: root, new: nil, now: now),
            operation: .admin(action))
    }

    /// Whether `identity` may read `path` (through `query`) now.
    public func authorizeRead(_ path: Path, query: QuerySpec?, as identity: Identity, now: Int64) -> AccessDecision {
        counted(
            policy.authorize(.read(query: query), at: path, as: identity, in: name, old: root, new: nil, now: now),
            operation: .read(query: query))
    }

    /// Counts a refusal of the policy (`canopy_rule_denials_total`, by the kind of operation) and returns it.
    func counted(_ decision: AccessDecision, operation: AccessOperation) -> AccessDecision {
        if !decision.allowed { metrics?.countDenial(operation) }
        return decision
    }

    /// Wraps `completion` so the outcome is counted (`canopy_writes_total`, and for the publish engine's
    /// actions `canopy_publishes_total` and their duration).
    private func counting(
        _ operation: WriteOperation, _ completion: @escaping (Result<WriteReceipt, WriteError>) -> Void
    ) -> (Result<WriteReceipt, WriteError>) -> Void {
        guard let metrics else { return completion }
        let started = monotonicNanoseconds()
        let isAdmin: Bool
        if case .admin = operation { isAdmin = true } else { isAdmin = false }
        return { result in
            let outcome: String
            switch result {
            case .success: outcome = "ok"
            case .failure(let error): outcome = error.code
            }
            metrics.countWrite(outcome)
            if isAdmin { metrics.countPublish(outcome, since: started) }
            completion(result)
        }
    }

    /// How many times an admin write computed off the loop is computed again when the tree changed meanwhile.
    static let offLoopAttempts = 3

    /// An admin write (a publish: thousands of locations) is built on the compute thread from the tree as it is
    /// now, and committed on the loop only if the tree is still that one (`version`); when another write changed it
    /// meanwhile it is built again, up to `offLoopAttempts` times, then refused (`.conflict`): never stale.
    private func performOffLoop(
        _ operation: WriteOperation, as identity: Identity, now: Int64, condition: WriteCondition?,
        on offLoop: @escaping (@escaping @Sendable () -> Void) -> Void, attempt: Int,
        _ completion: @escaping (Result<WriteReceipt, WriteError>) -> Void
    ) {
        guard let decision = admitted(operation, as: identity, now: now, completion) else { return }
        let root = self.root
        let version = self.version
        let publisher = identity.uid
        let loop = self.loop
        let items = parsedItems
        let back = LoopHeld((self, completion), loop: loop)
        offLoop {
            let result = Result { () throws(WriteError) -> BuiltWrite in
                let built = try WriteBuilder.build(
                    operation, root: root, now: now, publisher: publisher, items: items, makesRowsEarly: true)
                // Hashes are cached per node: the ETags the answer and a conditional retry need are computed here.
                _ = root.node(at: PublishLayout.pendingContent).etag
                _ = built.newRoot.node(at: PublishLayout.pendingContent).etag
                return built
            }
            let computed = LoopHeld(result, loop: loop)  // BuiltWrite holds tuples, which are not Sendable
            loop.execute {
                let (namespace, completion) = back.value
                namespace.finishOffLoop(
                    operation, as: identity, now: now, condition: condition, attempt: attempt,
                    computed: computed.value, from: root, version: version, decision: decision, completion)
            }
        }
    }

    /// The policy's allowing decision on admin action `operation` for `identity`; nil once `completion` was told
    /// of the refusal.
    private func admitted(
        _ operation: WriteOperation, as identity: Identity, now: Int64,
        _ completion: (Result<WriteReceipt, WriteError>) -> Void
    ) -> AccessDecision? {
        guard case .admin(let action) = operation else { preconditionFailure("admin actions only") }
        let decision = authorizeAdmin(action.name, as: identity, now: now)
        guard decision.allowed else {
            completion(.failure(.permissionDenied(reason: decision.reason)))
            return nil
        }
        return decision
    }

    /// Rebases tried on the compute thread before one is done on the loop, which the tree cannot change under.
    static let offLoopRebases = 1

    /// Commits `built`'s writes, computed from an older tree whose engine inputs are those of the current one
    /// (`PublishEngine.readsSameInputs`), on the current tree: its new tree is made again, on the compute thread
    /// (then checked again like a first build), or on the loop once `offLoopRebases` were overtaken by further
    /// writes; the store's writer makes its rows from the tree it lands on (`PublishRows`). The action is authorized
    /// again first: the identity's rights may have changed meanwhile.
    private func rebase(
        _ built: BuiltWrite, _ operation: WriteOperation, as identity: Identity, now: Int64,
        condition: WriteCondition?, attempt: Int, rebases: Int,
        _ completion: @escaping (Result<WriteReceipt, WriteError>) -> Void
    ) {
        guard let decision = admitted(operation, as: identity, now: now, completion) else { return }
        let root = self.root
        let version = self.version
        let (writes, access, path, mergeBase, resolved) =
            (built.writes, built.access, built.path, built.mergeBase, built.resolved)
        let rebuild: @Sendable () -> BuiltWrite = {
            BuiltWrite(
                writes: writes, newRoot: Namespace.applying(writes, to: root), access: access, path: path,
                mergeBase: mergeBase, resolved: resolved)
        }
        guard rebases <= Self.offLoopRebases, let offLoop else {
            return finishOffLoop(
                operation, as: identity, now: now, condition: condition, attempt: attempt, rebases: rebases,
                computed: .success(rebuild()), from: root, version: version, decision: decision, completion)
        }
        let loop = self.loop
        let back = LoopHeld((self, completion), loop: loop)
        offLoop {
            let computed = LoopHeld(Result<BuiltWrite, WriteError>.success(rebuild()), loop: loop)
            loop.execute {
                let (namespace, completion) = back.value
                namespace.finishOffLoop(
                    operation, as: identity, now: now, condition: condition, attempt: attempt, rebases: rebases,
                    computed: computed.value, from: root, version: version, decision: decision, completion)
            }
        }
    }

    private func finishOffLoop(
        _ operation: WriteOperation, as identity: Identity, now: Int64, condition: WriteCondition?, attempt: Int,
        rebases: Int = 0, computed: Result<BuiltWrite, WriteError>, from old: Node,
        version: UInt64, decision: AccessDecision, _ completion: @escaping (Result<WriteReceipt, WriteError>) -> Void
    ) {
        guard self.version == version else {
            // Not committed on `old`, which its rows were made for: they are not needed.
            if case .success(let built) = computed { built.early?.stop() }
            // Written meanwhile, but nowhere the engine reads: the same writes hold for the tree as it is now, and
            // only the new tree is made again (a publish must not fail because attendees are busy).
            if case .success(let built) = computed, PublishEngine.readsSameInputs(old, root) {
                return rebase(
                    built, operation, as: identity, now: now, condition: condition, attempt: attempt,
                    rebases: rebases + 1, completion)
            }
            guard attempt < Self.offLoopAttempts, let offLoop else { return completion(.failure(.conflict)) }
            performOffLoop(
                operation, as: identity, now: now, condition: condition, on: offLoop, attempt: attempt + 1, completion)
            return
        }
        if let condition, !condition.holds(in: old) {
            if case .success(let built) = computed { built.early?.stop() }
            let current = old.node(at: condition.path)
            whenDurable { _ in completion(.failure(.conditionFailed(current: current, at: condition.path))) }
            return
        }
        let built: BuiltWrite
        switch computed {
        case .success(let value): built = value
        case .failure(let error): return completion(.failure(error))
        }
        commit(AuthorizedWrite(built, decision: decision, rowsByWriter: true))
        // The receipt is the last holder of the action's writes and of the rows made early (a publish: 5,000 writes,
        // 13,000 rows). Freed by the loop once answered, they took it about 1 ms before it wrote the answer and the
        // publish's events.
        let receipt = BackgroundRelease.Handle(WriteReceipt(before: old, built: built))
        whenDurable { ok in
            completion(ok ? .success(receipt.value) : .failure(.storageFailed))
            receipt.release()
        }
    }

    /// Steps 1–4 of the pipeline (see the file header).
    private func prepare(
        _ operation: WriteOperation, as identity: Identity, now: Int64, condition: WriteCondition?
    ) -> Result<AuthorizedWrite, WriteError> {
        let old = root
        var adminDecision: AccessDecision?
        if case .admin(let action) = operation {
            let decision = authorizeAdmin(action.name, as: identity, now: now)
            guard decision.allowed else { return .failure(.permissionDenied(reason: decision.reason)) }
            adminDecision = decision
        }
        let built: BuiltWrite
        do {
            built = try WriteBuilder.build(
                operation, root: old, now: now, publisher: identity.uid, items: parsedItems)
        } catch {
            return .failure(error)
        }
        if let condition, !condition.holds(in: old) {
            // The answer to a failed condition shows the current data: only to someone who may read it.
            let read = authorizeRead(condition.path, query: nil, as: identity, now: now)
            guard read.allowed else { return .failure(.permissionDenied(reason: read.reason)) }
            return .failure(.conditionFailed(current: old.node(at: condition.path), at: condition.path))
        }
        let decision =
            adminDecision
            ?? counted(
                policy.authorize(built.access, at: built.path, as: identity, in: name, old: old, new: built.newRoot, now: now),
                operation: built.access)
        guard decision.allowed else { return .failure(.permissionDenied(reason: decision.reason)) }
        return .success(AuthorizedWrite(built, decision: decision))
    }
}
