// StoreError -- why a store operation failed: SQLite facts, a refused mutation, an unknown file version.
import CanopyCore

/// A failed store operation.
///
/// Carries facts (the SQLite result code, SQLite's message and SQL text, a file path, a schema
/// version) but never stored values.
public struct StoreError: CanopyError, Equatable {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// SQLite refused or failed a call; `sqlite` has the details.
        case sqlite
        /// A mutation cannot be stored (a bad path segment, a non-primitive leaf, a non-finite number).
        case invalidMutation
        /// The file was written by a newer Canopy (its schema version is higher than this build knows).
        case unsupportedSchemaVersion
        /// The file is an SQLite database but not a Canopy store.
        case notAStore
        /// A namespace name is not `[A-Za-z0-9][A-Za-z0-9_-]{0,62}`.
        case invalidNamespace
        /// Another process holds the data directory's lock.
        case directoryInUse
        /// A file-system call failed (creating the data directory, listing it, creating a file).
        case fileSystem
        /// The store was closed before the operation ran.
        case closed
        /// A stored row could not be decoded (the file was altered outside Canopy).
        case corrupt
        /// Committed submissions are missing from the file (its WAL was lost or damaged), or the record of the
        /// last committed one is damaged: see `missing` and `CommitSequenceFile`.
        case dataLoss
        /// A backup file that is truncated, altered, of another format version or not a Canopy store.
        case invalidBackup
    }

    /// What went wrong.
    public let kind: Kind
    /// The SQLite failure, for `.sqlite` (and for failures found while SQLite ran).
    public let sqlite: SQLiteError?
    /// A short factual description (no stored values).
    public let detail: String
    /// The file or the key path involved, when there is one.
    public let location: String?
    /// For `.dataLoss`: the revision recorded as committed and the one recovered (nil when the record is damaged).
    public let missing: MissingCommits?

    /// Creates an error of `kind` with a description and an optional location.
    public init(
        _ kind: Kind, _ detail: String, location: String? = nil, sqlite: SQLiteError? = nil,
        missing: MissingCommits? = nil
    ) {
        self.kind = kind
        self.detail = detail
        self.location = location
        self.sqlite = sqlite
        self.missing = missing
    }

    /// Wraps an SQLite failure.
    public init(_ error: SQLiteError, location: String? = nil) {
        self.init(.sqlite, error.userMessage, location: location, sqlite: error)
    }

    /// The SQLite result code (primary), when SQLite failed.
    public var resultCode: Int32? { sqlite?.resultCode }

    public var code: String {
        switch kind {
        case .sqlite: sqlite?.code ?? "storage_error"
        case .invalidMutation: "invalid_write"
        case .unsupportedSchemaVersion: "unsupported_store_version"
        case .notAStore: "not_a_store"
        case .invalidNamespace: "invalid_namespace"
        case .directoryInUse: "data_directory_in_use"
        case .fileSystem: "storage_error"
        case .closed: "storage_closed"
        case .corrupt: "storage_corrupt"
        case .dataLoss: "data_loss"
        case .invalidBackup: "invalid_backup"
        }
    }

    public var userMessage: String {
        guard let location else { return detail }
        return "\(detail) [\(location)]"
    }

    public var description: String { "StoreError(\(code)): \(userMessage)" }
}
