// Backup -- `canopy backup` / `canopy restore`: consistent copies of namespaces' store files, and their checked,
// atomic restore, against a running daemon (or a stopped daemon's data directory with --offline).

import CanopyCore
import CanopyStore
import Foundation

/// `canopy backup`.
struct BackupCommand: Command {
    static let name = "backup"
    static let abstract = "Copy events' store files, consistently and while writes go on, into a backup directory."
    static let usage = """
        canopy backup (--ns <event> | --all) --out <dir> [--url <url>] [--token <token>]
        canopy backup (--ns <event> | --all) --out <dir> --offline [--data <dir>]
          Writes <dir>/<event>-<sha256>.canopy (the snapshot, an SQLite file) and <event>-<sha256>.json (its
          manifest: format version, event, time, last commit, SHA-256). The daemon takes the snapshot at a commit
          boundary; the files are written under temporary names, fsynced and renamed, the manifest last. A
          directory that cannot be written fails before anything is copied. --offline reads the data directory.
        \(RemoteOptions.usage)
        """
    var remote = RemoteOptions()
    var all = false
    var output = ""
    var offline = false

    init(parsing arguments: inout Arguments) throws(UsageError) {
        var output: String?
        while let option = try arguments.nextOption() {
            if try remote.parse(option, &arguments) { continue }
            switch option {
            case "--all": all = true
            case "--out": output = try arguments.value(for: option)
            case "--offline": offline = true
            default: throw .unknownOption(option, command: Self.name)
            }
        }
        guard let output else { throw .missingOption("--out") }
        guard all != (remote.namespace != nil) else { throw UsageError(message: "give either --ns <event> or --all") }
        self.output = output
    }

    func run() throws {
        try BackupDirectory.prepare(output)
        let names: [String]
        if let namespace = remote.namespace {
            names = [namespace]
        } else if offline {
            names = try DataDirectory(path: remote.dataDirectory).namespaces()
        } else {
            let listing = try JSONValue.parse(try remote.send("GET", "/.canopy/namespaces").body)
            names = listing["namespaces"]?.arrayValue?.compactMap(\.stringValue) ?? []
        }
        for name in names {
            let manifest = try backUp(name)
            print("backed up \(name) (last commit \(manifest.lastCommit), \(manifest.bytes) bytes) to \(output)/\(manifest.fileName)")
        }
        if names.isEmpty { writeStandardError("canopy: no event has data: nothing to back up\n") }
    }

    private func backUp(_ name: String) throws -> BackupManifest {
        let now = SystemClock().nowMilliseconds()
        let manifest: BackupManifest
        let bytes: [UInt8]
        if offline {
            let snapshot = try StoreBackup.snapshot(
                of: try DataDirectory(path: remote.dataDirectory).storePath(for: name), scratchDirectory: output)
            bytes = snapshot.bytes
            manifest = BackupManifest(
                namespace: name, createdAt: now, lastCommit: snapshot.lastCommit,
                schemaVersion: snapshot.schemaVersion, bytes: bytes.count, sha256: snapshot.sha256)
        } else {
            var options = remote
            options.namespace = name
            let response = try options.send("GET", "/.canopy/backup")
            bytes = response.body
            let sha256 = Hash.sha256Hex(bytes)
            guard response.header("x-canopy-sha256") == sha256,
                let lastCommit = response.header("x-canopy-last-commit").flatMap({ UInt64($0) }),
                let schemaVersion = response.header("x-canopy-schema-version").flatMap({ Int64($0) })
            else {
                throw CommandFailure("the backup of \(name) arrived damaged (hash or headers do not match): nothing was written")
            }
            manifest = BackupManifest(
                namespace: name, createdAt: now, lastCommit: lastCommit, schemaVersion: schemaVersion,
                bytes: bytes.count, sha256: sha256)
        }
        try BackupDirectory.writeAtomically(bytes, named: manifest.fileName, in: output)
        try BackupDirectory.writeAtomically(Array(manifest.serialized().utf8), named: manifest.manifestName, in: output)
        try StoreBackup.syncDirectory(output)
        return manifest
    }
}

/// `canopy restore`.
struct RestoreCommand: Command {
    static let name = "restore"
    static let abstract = "Swap a checked backup in for an event's data, atomically (refuses anything else)."
    static let usage = """
        canopy restore --from <backup.canopy | manifest.json> [--ns <event>] [--url <url>] [--token <token>]
        canopy restore --from <backup.canopy | manifest.json> [--ns <event>] --offline [--data <dir>]
          Checks the manifest's format version, the file's size and SHA-256, then the daemon checks them again
          with SQLite's integrity check and the store schema, and renames the file over the event's store (the
          event is served from it at once; its listeners get the restored tree). Anything else is refused with
          nothing changed. --ns restores into another event than the manifest's. --offline writes into a stopped
          daemon's data directory (refused while a daemon holds it).
        \(RemoteOptions.usage)
        """
    var remote = RemoteOptions()
    var source = ""
    var offline = false

    init(parsing arguments: inout Arguments) throws(UsageError) {
        var source: String?
        while let option = try arguments.nextOption() {
            if try remote.parse(option, &arguments) { continue }
            switch option {
            case "--from": source = try arguments.value(for: option)
            case "--offline": offline = true
            default: throw .unknownOption(option, command: Self.name)
            }
        }
        guard let source else { throw .missingOption("--from") }
        self.source = source
    }

    func run() throws {
        let (manifest, file, bytes) = try loadChecked()
        let namespace = remote.namespace ?? manifest.namespace
        try DataDirectory.validateNamespace(namespace)
        if offline {
            try restoreOffline(bytes, into: namespace)
        } else {
            var options = remote
            options.namespace = namespace
            _ = try options.send(
                "POST", "/.canopy/restore", body: bytes,
                headers: [
                    ("X-Canopy-Backup-Format", "\(manifest.formatVersion)"), ("X-Canopy-SHA256", manifest.sha256),
                    ("Content-Type", "application/vnd.sqlite3"),
                ])
        }
        print("restored \(namespace) from \(file) (last commit \(manifest.lastCommit))")
    }

    /// The manifest, the backup file's path and its bytes, once they agree.
    private func loadChecked() throws -> (BackupManifest, String, [UInt8]) {
        let manifestPath: String
        if source.hasSuffix(".json") {
            manifestPath = source
        } else if source.hasSuffix(BackupManifest.fileExtension) {
            manifestPath = String(source.dropLast(BackupManifest.fileExtension.count)) + ".json"
        } else {
            throw CommandFailure("\(source) is neither a backup file (.canopy) nor a manifest (.json)")
        }
        guard let manifestData = FileManager.default.contents(atPath: manifestPath) else {
            throw CommandFailure("refused, nothing was changed: cannot read the manifest \(manifestPath)")
        }
        let manifest: BackupManifest
        do {
            manifest = try BackupManifest.parse(Array(manifestData))
        } catch {
            throw CommandFailure("refused, nothing was changed: \(manifestPath): \(error.userMessage)")
        }
        let directory = (manifestPath as NSString).deletingLastPathComponent
        let file = source.hasSuffix(".json") ? (directory.isEmpty ? "" : directory + "/") + manifest.fileName : source
        guard let data = FileManager.default.contents(atPath: file) else {
            throw CommandFailure("refused, nothing was changed: cannot read the backup file \(file)")
        }
        let bytes = Array(data)
        guard bytes.count == manifest.bytes, Hash.sha256Hex(bytes) == manifest.sha256 else {
            throw CommandFailure(
                "refused, nothing was changed: \(file) does not match its manifest's size and SHA-256 (truncated or altered)")
        }
        return (manifest, file, bytes)
    }

    /// Restores into a data directory that no daemon serves.
    private func restoreOffline(_ bytes: [UInt8], into namespace: String) throws {
        let directory = try DataDirectory(path: remote.dataDirectory)
        let lock = try Self.lock(directory)
        let live = try directory.storePath(for: namespace)
        let temporary = StoreBackup.temporaryPath(in: directory.path, namespace: namespace)
        do {
            try StoreBackup.writeDurably(bytes, to: temporary)
            _ = try StoreBackup.check(fileAt: temporary)
            // A store left by a killed daemon may have commits in its WAL: opening and closing it checkpoints them.
            if access(live, F_OK) == 0 { try NamespaceStore(path: live).flushAndClose() }
            try StoreBackup.install(temporary, over: live)
        } catch {
            StoreBackup.removeFileAndCompanions(temporary)
            throw CommandFailure("refused, nothing was changed: \(error.userMessage)")
        }
        withExtendedLifetime(lock) {}
    }

    private static func lock(_ directory: DataDirectory) throws -> DataDirectory.Lock {
        do {
            return try directory.lock()
        } catch {
            if error.kind == .directoryInUse {
                throw CommandFailure("\(directory.path) is in use by a running daemon: restore over HTTP instead")
            }
            throw error
        }
    }
}

/// The backup directory's checks and atomic writes.
enum BackupDirectory {
    /// Creates `path` if missing (mode 0700) and proves it writable, before anything is copied.
    static func prepare(_ path: String) throws {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw CommandFailure("cannot create the backup directory \(path): nothing was copied")
            }
        } else if !isDirectory.boolValue {
            throw CommandFailure("the backup directory \(path) is not a directory: nothing was copied")
        }
        let probe = path + "/.canopy-probe-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        do {
            try StoreBackup.writeDurably(Array("probe".utf8), to: probe)
            unlink(probe)
        } catch {
            throw CommandFailure("the backup directory \(path) is not writable: nothing was copied")
        }
    }

    /// Writes `bytes` under a temporary name in `directory`, fsyncs it and renames it to `name`.
    static func writeAtomically(_ bytes: [UInt8], named name: String, in directory: String) throws {
        let temporary = directory + "/." + name + ".tmp-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        try StoreBackup.writeDurably(bytes, to: temporary)
        guard rename(temporary, directory + "/" + name) == 0 else {
            let code = errno
            unlink(temporary)
            throw CommandFailure("cannot rename \(temporary) to \(name) (errno \(code))")
        }
    }
}
