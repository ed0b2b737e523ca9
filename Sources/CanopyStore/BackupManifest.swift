// BackupManifest -- the JSON file that describes one backup file: its format, namespace, time, commit and hash.
//
// BACKUP FORMAT (version 1)
//
// A backup of namespace N is two files in the backup directory:
//   <N>-<sha256>.canopy   a self-contained SQLite database (rollback-journal mode, no -wal) in the store format of
//                         StoreSchema, a snapshot of N's store at one commit boundary;
//   <N>-<sha256>.json     this manifest:
//     {"format": "canopy-backup", "formatVersion": 1, "namespace": N, "createdAt": <ms since epoch>,
//      "lastCommit": <the store's committed revision in the snapshot>, "schemaVersion": <StoreSchema version>,
//      "bytes": <size of the .canopy file>, "sha256": <lowercase hex SHA-256 of the .canopy file>,
//      "file": "<N>-<sha256>.canopy"}
// Each file is written under a temporary name, fsynced and renamed; the manifest last, then the directory is
// fsynced: a manifest exists only for a complete backup file. Restore trusts nothing it has not checked: the
// format and version, the hash, SQLite's integrity check and the store's schema.
import CanopyCore

/// The manifest of one backup file.
public struct BackupManifest: Sendable, Equatable {
    /// The value of "format".
    public static let format = "canopy-backup"
    /// The backup format version this build writes and restores.
    public static let currentFormatVersion: Int64 = 1
    /// The file-name extension of a backup file.
    public static let fileExtension = ".canopy"

    public var formatVersion: Int64 = currentFormatVersion
    public var namespace: String
    public var createdAt: Int64
    public var lastCommit: UInt64
    public var schemaVersion: Int64
    public var bytes: Int
    public var sha256: String

    public init(namespace: String, createdAt: Int64, lastCommit: UInt64, schemaVersion: Int64, bytes: Int, sha256: String) {
        self.namespace = namespace
        self.createdAt = createdAt
        self.lastCommit = lastCommit
        self.schemaVersion = schemaVersion
        self.bytes = bytes
        self.sha256 = sha256
    }

    /// The backup file's name: `<namespace>-<sha256>.canopy`.
    public var fileName: String { namespace + "-" + sha256 + Self.fileExtension }
    /// The manifest's own file name: `<namespace>-<sha256>.json`.
    public var manifestName: String { namespace + "-" + sha256 + ".json" }

    /// The manifest as JSON text (one object, newline-terminated).
    public func serialized() -> String {
        let object: JSONValue = [
            "format": .string(Self.format), "formatVersion": .int(formatVersion), "namespace": .string(namespace),
            "createdAt": .int(createdAt), "lastCommit": .int(Int64(lastCommit)), "schemaVersion": .int(schemaVersion),
            "bytes": .int(Int64(bytes)), "sha256": .string(sha256), "file": .string(fileName),
        ]
        return object.serialized() + "\n"
    }

    /// Parses and checks a manifest.
    ///
    /// - Throws: `.invalidBackup` when it is not a Canopy backup manifest, or one of another format version.
    public static func parse(_ bytes: [UInt8]) throws(StoreError) -> BackupManifest {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw StoreError(.invalidBackup, "the manifest is not valid JSON")
        }
        guard value["format"]?.stringValue == format else {
            throw StoreError(.invalidBackup, "the manifest is not a Canopy backup manifest (no \"format\": \"\(format)\")")
        }
        guard let version = value["formatVersion"]?.int64Value else {
            throw StoreError(.invalidBackup, "the manifest has no formatVersion")
        }
        guard version == currentFormatVersion else {
            throw StoreError(
                .invalidBackup,
                "the backup has format version \(version); this build restores version \(currentFormatVersion)")
        }
        guard let namespace = value["namespace"]?.stringValue, DataDirectory.isValidNamespace(namespace),
            let createdAt = value["createdAt"]?.int64Value, let lastCommit = value["lastCommit"]?.int64Value,
            lastCommit >= 0, let schemaVersion = value["schemaVersion"]?.int64Value,
            let bytes = value["bytes"]?.int64Value, bytes >= 0,
            let sha256 = value["sha256"]?.stringValue, sha256.utf8.count == 64,
            sha256.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else {
            throw StoreError(.invalidBackup, "the manifest lacks a field or has one of the wrong type")
        }
        return BackupManifest(
            namespace: namespace, createdAt: createdAt, lastCommit: UInt64(lastCommit), schemaVersion: schemaVersion,
            bytes: Int(bytes), sha256: sha256)
    }
}
