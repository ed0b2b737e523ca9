// DataDirectory -- the folder holding one `<namespace>.sqlite` file per namespace.
import Foundation

/// The data directory: one store file per namespace, `<directory>/<namespace>.sqlite`.
///
/// Namespace names are `[A-Za-z0-9][A-Za-z0-9_-]{0,62}`, so a name can never escape the directory or
/// collide with SQLite's `-wal`/`-shm` companions in a confusing way.
///
/// ```swift
/// let directory = try DataDirectory(path: "./canopy-data")   // created with mode 0700 if missing
/// let store = try NamespaceStore(path: directory.storePath(for: "chat"))
/// ```
public struct DataDirectory: Sendable {
    /// The directory's path.
    public let path: String

    /// The file-name extension of a store file.
    public static let storeExtension = ".sqlite"
    /// The longest namespace name.
    public static let maximumNamespaceLength = 63

    /// Uses the directory at `path`, creating it (and missing parents) with mode 0700.
    ///
    /// An existing directory keeps its mode.
    /// - Throws: `.fileSystem` when it cannot be created or is not a directory.
    public init(path: String) throws(StoreError) {
        self.path = path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw StoreError(.fileSystem, "the data directory path is not a directory", location: path)
            }
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw StoreError(.fileSystem, "cannot create the data directory", location: path)
        }
    }

    /// Whether `name` is a valid namespace name: `[A-Za-z0-9][A-Za-z0-9_-]{0,62}`.
    public static func isValidNamespace(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= maximumNamespaceLength, isAlphanumeric(first) else {
            return false
        }
        return bytes.dropFirst().allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    /// Checks a namespace name.
    ///
    /// - Throws: `.invalidNamespace` when it is not `[A-Za-z0-9][A-Za-z0-9_-]{0,62}`.
    public static func validateNamespace(_ name: String) throws(StoreError) {
        guard isValidNamespace(name) else {
            throw StoreError(
                .invalidNamespace,
                "a namespace name is 1 to 63 letters, digits, '_' or '-', starting with a letter or digit")
        }
    }

    /// The store file of `namespace`.
    ///
    /// - Throws: `.invalidNamespace` for an invalid name.
    public func storePath(for namespace: String) throws(StoreError) -> String {
        try Self.validateNamespace(namespace)
        return path + "/" + namespace + Self.storeExtension
    }

    /// The namespaces that have a store file here, sorted.
    ///
    /// - Throws: `.fileSystem` when the directory cannot be listed.
    public func namespaces() throws(StoreError) -> [String] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw StoreError(.fileSystem, "cannot list the data directory", location: path)
        }
        return names.compactMap { name -> String? in
            guard name.hasSuffix(Self.storeExtension) else { return nil }
            let namespace = String(name.dropLast(Self.storeExtension.count))
            return Self.isValidNamespace(namespace) ? namespace : nil
        }.sorted()
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: false
        }
    }
}
