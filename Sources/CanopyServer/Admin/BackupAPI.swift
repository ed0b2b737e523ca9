// BackupAPI -- online backup and restore of a namespace's store file, for the admin credential only.
//
//   GET  /.canopy/backup?ns=E     a consistent snapshot of E's store (`StoreBackup.snapshot`, on a store thread,
//                                 while writes go on): the body is the backup file, the headers describe it:
//                                 X-Canopy-Backup-Format (1), X-Canopy-Last-Commit (the committed revision in
//                                 the snapshot), X-Canopy-Schema-Version, X-Canopy-SHA256 (of the body).
//   POST /.canopy/restore?ns=E    body: a backup file; headers X-Canopy-Backup-Format and X-Canopy-SHA256 (from
//                                 its manifest). Refused (400, nothing changed) unless the format version is 1,
//                                 the body's SHA-256 is the one given and the file is a whole Canopy store this
//                                 build reads; then swapped in atomically (`Namespace.restore`) and served.
//   GET  /.canopy/namespaces      {"namespaces": [names of the namespaces that have a store file]}
//
// Only the admin credential may call these (a backup holds every namespace's data regardless of rules; a token
// with `admin: true` is an event organiser, not the operator). One backup or restore of a namespace at a time
// (409 otherwise). The CLI (`canopy backup`, `canopy restore`) writes and reads the files and their manifests.

import CanopyCore
import CanopyNet
import CanopyStore

extension RESTHandler {
    /// Handles the backup endpoints; false for any other admin action.
    func handleArchive(
        _ request: HTTPRequest, method: String, action: String, name: String, identity: Identity,
        _ responder: HTTPResponder
    ) throws -> Bool {
        guard ["backup", "restore", "namespaces"].contains(action) else { return false }
        guard identity.isAdmin else {
            throw RESTError(403, "Backup and restore need the admin credential.")
        }
        let dataDirectory = context.configuration.dataDirectory
        if action == "namespaces" {
            guard method == "GET" else { throw RESTError(405, "Use GET /.canopy/namespaces.") }
            let names = try DataDirectory(path: dataDirectory).namespaces()
            responder.respond(.json(200, ["namespaces": .array(names.map { .string($0) })]))
            return true
        }
        guard DataDirectory.isValidNamespace(name) else { throw RESTError(400, "Invalid namespace name '\(name)'.") }
        let registry = context.registry
        guard !registry.archiving.contains(name) else {
            throw RESTError(409, "A backup or restore of '\(name)' is under way; retry when it is done.")
        }
        let livePath = dataDirectory + "/" + name + DataDirectory.storeExtension
        switch (method, action) {
        case ("GET", "backup"):
            guard fileExists(livePath) else { throw RESTError(404, "Namespace '\(name)' has no data to back up.") }
            backUp(name, livePath: livePath, dataDirectory: dataDirectory, responder)
        case ("POST", "restore"):
            try restore(name, request, livePath: livePath, dataDirectory: dataDirectory, responder)
        default:
            throw RESTError(405, "Use GET /.canopy/backup or POST /.canopy/restore.")
        }
        return true
    }

    private func backUp(_ name: String, livePath: String, dataDirectory: String, _ responder: HTTPResponder) {
        let registry = context.registry
        let loop = registry.loop
        let bound = LoopBound(registry, loop: loop)
        let held = LoopHeld(responder, loop: loop)
        registry.archiving.insert(name)
        registry.pool.run {
            let result = Result { () throws(StoreError) in
                try StoreBackup.snapshot(of: livePath, scratchDirectory: dataDirectory)
            }
            loop.execute {
                bound.value?.archiving.remove(name)
                switch result {
                case .success(let snapshot):
                    bound.value?.logger.notice(
                        "ns.backup", ["ns": name, "last_commit": "\(snapshot.lastCommit)", "bytes": "\(snapshot.bytes.count)"])
                    held.value.respond(
                        HTTPResponse(
                            status: 200,
                            headers: [
                                ("Content-Type", "application/vnd.sqlite3"),
                                ("X-Canopy-Backup-Format", "\(BackupManifest.currentFormatVersion)"),
                                ("X-Canopy-Last-Commit", "\(snapshot.lastCommit)"),
                                ("X-Canopy-Schema-Version", "\(snapshot.schemaVersion)"),
                                ("X-Canopy-SHA256", snapshot.sha256),
                            ], body: snapshot.bytes))
                case .failure(let error):
                    bound.value?.logger.error("ns.backup_failed", ["ns": name, "error": error.userMessage])
                    held.value.respond(.error(status: 500, message: "Backup failed: \(error.userMessage)"))
                }
            }
        }
    }

    private func restore(
        _ name: String, _ request: HTTPRequest, livePath: String, dataDirectory: String, _ responder: HTTPResponder
    ) throws {
        let format = request.header("x-canopy-backup-format") ?? ""
        guard format == "\(BackupManifest.currentFormatVersion)" else {
            throw RESTError(
                400,
                "Refused, nothing was changed: the backup has format version '\(format)'; this daemon restores "
                    + "version \(BackupManifest.currentFormatVersion) (send X-Canopy-Backup-Format).")
        }
        guard let expected = request.header("x-canopy-sha256")?.lowercased() else {
            throw RESTError(400, "Refused, nothing was changed: send the backup's SHA-256 in X-Canopy-SHA256.")
        }
        let body = request.body
        guard Hash.sha256Hex(body) == expected else {
            throw RESTError(
                400, "Refused, nothing was changed: the backup does not match its SHA-256 (truncated or altered).")
        }
        let registry = context.registry
        let loop = registry.loop
        let bound = LoopBound(registry, loop: loop)
        let options = registry.storeOptions(for: name)
        let pool = registry.pool
        registry.archiving.insert(name)
        let held = LoopHeld(responder, loop: loop)
        let temporary = StoreBackup.temporaryPath(in: dataDirectory, namespace: name)
        let fail: @Sendable (Int, String) -> Void = { status, message in
            StoreBackup.removeFileAndCompanions(temporary)
            loop.execute {
                bound.value?.archiving.remove(name)
                bound.value?.logger.error("ns.restore_refused", ["ns": name, "error": message])
                held.value.respond(.error(status: status, message: message))
            }
        }
        pool.run {
            let checked: StoreBackup.Checked
            do throws(StoreError) {
                try StoreBackup.writeDurably(body, to: temporary)
                checked = try StoreBackup.check(fileAt: temporary)
            } catch {
                let status = error.kind == .invalidBackup ? 400 : 500
                return fail(status, "Refused, nothing was changed: \(error.userMessage)")
            }
            loop.execute {
                guard let registry = bound.value else { return }
                registry.whenOpen(name, create: true) { result in
                    guard case .success(let namespace?) = result else {
                        if case .failure(let error) = result {
                            let reason = (error as? any CanopyError)?.userMessage ?? "\(error)"
                            return fail(503, "Refused, nothing was changed: the namespace cannot be opened: \(reason)")
                        }
                        return fail(500, "Refused, nothing was changed: the namespace cannot be opened.")
                    }
                    namespace.restore(from: temporary, livePath: livePath, options: options, pool: pool) { outcome in
                        switch outcome {
                        case .success(let revision):
                            registry.archiving.remove(name)
                            registry.logger.notice("ns.restored", ["ns": name, "last_commit": "\(revision)"])
                            held.value.respond(
                                .json(
                                    200,
                                    [
                                        "ok": true, "ns": .string(name), "lastCommit": .int(Int64(revision)),
                                        "schemaVersion": .int(checked.schemaVersion),
                                    ]))
                        case .failure(let failure):
                            fail(failure.status, failure.message)
                        }
                    }
                }
            }
        }
    }
}
