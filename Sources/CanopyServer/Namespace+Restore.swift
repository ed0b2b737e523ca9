// Namespace+Restore -- swapping a checked backup in for a namespace's file while the daemon runs.
//
// The namespace holds new writes (they go on filling the open batch, unacknowledged), lets its store finish the
// batches in flight and close (which checkpoints and deletes the WAL), renames the backup over the file on a
// store thread (`StoreBackup.install`), opens the new file and loads its tree. Back on the loop the held writes
// are applied again on the restored tree and listeners are told what differs, as after a reload. If the rename
// is refused, the old file is opened again: nothing changed.

import CanopyCore
import CanopyStore

/// Why a restore could not start or finish.
struct RestoreFailure: Error, CanopyError {
    var status: Int
    var message: String
    var code: String { status == 409 ? "restore_busy" : "restore_failed" }
    var userMessage: String { message }
}

extension Namespace {
    /// Replaces the namespace's file with the checked backup at `temporaryFile` (beside `livePath`) and serves it.
    ///
    /// - Parameters:
    ///   - completion: on the loop, with the revision now served, or the failure (then the old data is served
    ///     and `temporaryFile` is left for the caller to remove).
    func restore(
        from temporaryFile: String, livePath: String, options: StoreOptions, pool: StorePool,
        completion: @escaping (Result<UInt64, RestoreFailure>) -> Void
    ) {
        loop.assertInLoop()
        guard !isHoldingBatches, pendingCreation == nil else {
            completion(.failure(RestoreFailure(status: 409, message: "The namespace is busy (loading or being created); retry.")))
            return
        }
        isHoldingBatches = true
        let loop = self.loop
        let bound = LoopBound(self, loop: loop)
        let name = self.name
        let done = LoopHeld(completion, loop: loop)
        let swap: @Sendable () -> Void = {
            let installError: StoreError?
            do throws(StoreError) {
                try StoreBackup.install(temporaryFile, over: livePath)
                installError = nil
            } catch {
                installError = error
            }
            let opened: Result<(NamespaceStore, Node, Int), any Error> = Result {
                let store = try NamespaceStore(path: livePath, options: options, pool: pool)
                let (root, bytes) = try Namespace.loadMeasured(from: store)
                return (store, root, bytes)
            }
            loop.execute {
                guard let namespace = bound.value else { return }
                namespace.finishRestore(opened, installError: installError, name: name, completion: done.value)
            }
        }
        if let store {
            store.closeWhenDrained(swap)
        } else {
            pool.run(swap)
        }
    }

    private func finishRestore(
        _ opened: Result<(NamespaceStore, Node, Int), any Error>, installError: StoreError?, name: String,
        completion: (Result<UInt64, RestoreFailure>) -> Void
    ) {
        switch opened {
        case .success(let (store, root, bytes)):
            self.store = store
            reloaded(.success((root, bytes)))
            if let installError {
                completion(.failure(RestoreFailure(status: 500, message: "Restore failed, nothing was changed: \(installError.userMessage)")))
            } else {
                completion(.success(store.revision))
            }
        case .failure(let error):
            // The file (old or new) cannot be opened: serve nothing rather than a tree that is not on disk.
            store = nil
            isHoldingBatches = false
            let reason = (error as? any CanopyError)?.userMessage ?? "\(error)"
            completion(.failure(RestoreFailure(status: 500, message: "Restore failed: the store cannot be opened: \(reason)")))
        }
    }
}
