// DataDirectoryTests -- namespace names, store paths, directory creation and listing.
import Foundation
import Testing

@testable import CanopyStore

@Suite struct DataDirectoryTests {
    let root = TemporaryDirectory()

    @Test(arguments: ["a", "Z", "0", "default", "my-app_2", "a-", String(repeating: "x", count: 63)])
    func acceptsValidNames(_ name: String) throws {
        #expect(DataDirectory.isValidNamespace(name))
        let directory = try DataDirectory(path: root.path)
        #expect(try directory.storePath(for: name) == root.path + "/" + name + ".sqlite")
    }

    @Test(arguments: [
        "", "-a", "_a", "a.b", "a/b", "..", "a b", "é", "a\u{0}", "name.sqlite", String(repeating: "x", count: 64),
    ])
    func refusesInvalidNames(_ name: String) throws {
        #expect(!DataDirectory.isValidNamespace(name))
        let directory = try DataDirectory(path: root.path)
        #expect { try directory.storePath(for: name) } throws: { ($0 as? StoreError)?.kind == .invalidNamespace }
    }

    @Test func createsAMissingDirectoryPrivately() throws {
        let path = root.path + "/nested/data"
        _ = try DataDirectory(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(attributes[.type] as? FileAttributeType == .typeDirectory)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
    }

    @Test func refusesAPathThatIsAFile() throws {
        let path = root.file("plain")
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        #expect { try DataDirectory(path: path) } throws: { ($0 as? StoreError)?.kind == .fileSystem }
    }

    @Test func listsTheNamespacesThatHaveStores() throws {
        let directory = try DataDirectory(path: root.path)
        #expect(try directory.namespaces() == [])
        for name in ["beta", "alpha"] {
            let store = try NamespaceStore(path: try directory.storePath(for: name))
            try commit(store, [leaf("x", .int(1))])  // leaves -wal and -shm files behind until close
        }
        _ = FileManager.default.createFile(atPath: root.file("notes.txt"), contents: Data())
        _ = FileManager.default.createFile(atPath: root.file("-bad.sqlite"), contents: Data())
        #expect(try directory.namespaces() == ["alpha", "beta"])
    }

    @Test func onlyOneHolderAtATime() throws {
        let directory = try DataDirectory(path: root.path)
        var first: DataDirectory.Lock? = try directory.lock()
        #expect { try directory.lock() } throws: { ($0 as? StoreError)?.kind == .directoryInUse }
        #expect(first != nil)
        first = nil
        let second = try directory.lock()
        _ = second
        #expect(try directory.namespaces() == [])  // the lock file is not a namespace
    }
}
