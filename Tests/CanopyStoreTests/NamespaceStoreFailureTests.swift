import CSQLite
// NamespaceStoreFailureTests -- a failed transaction changes nothing; bad files are refused clearly.
import CanopyCore
import Foundation
import Synchronization
import Testing

@testable import CanopyStore

@Suite struct NamespaceStoreFailureTests {
    let directory = TemporaryDirectory()

    @Test func aFullDatabaseFailsTheWholeGroupAndKeepsTheOldState() throws {
        var options = StoreOptions()
        options.maximumPageCount = 8  // a handful of 4 KiB pages: a large write cannot fit
        let store = try NamespaceStore(path: directory.file(), options: options)
        try commit(store, [leaf("small", .string("x"))])

        let big = String(repeating: "y", count: 200_000)
        let result = write(store, [delete("small"), leaf("big", .string(big))])
        #expect { try result.get() } throws: { error in
            (error as? StoreError)?.sqlite?.resultCode == SQLITE_FULL && (error as? StoreError)?.code == "storage_full"
        }
        #expect(store.revision == 1)
        #expect(try rows(of: store) == ["/small=\"x\""])
        // The store keeps working after the failure.
        #expect(try commit(store, [leaf("next", .int(1))]) == 2)
        #expect(try rows(of: store) == ["/next=1", "/small=\"x\""])
    }

    @Test func aFullDatabaseErrorNamesNoValues() throws {
        var options = StoreOptions()
        options.maximumPageCount = 8
        let store = try NamespaceStore(path: directory.file(), options: options)
        let secret = "s3cret-" + String(repeating: "z", count: 100_000)
        let result = write(store, [leaf("k", .string(secret))])
        #expect { try result.get() } throws: { error in
            !"\(error)".contains("s3cret") && !(error as? StoreError)!.userMessage.contains("s3cret")
        }
    }

    @Test func aFileFromANewerVersionIsRefusedAndLeftAlone() throws {
        let path = directory.file()
        do {
            let store = try NamespaceStore(path: path)
            try commit(store, [leaf("a", .int(1))])
        }
        let connection = try SQLiteConnection(path: path)
        try connection.execute("UPDATE meta SET value = 99 WHERE name = 'schema_version'")
        try connection.close()

        #expect {
            try NamespaceStore(path: path)
        } throws: { error in
            let error = error as? StoreError
            return error?.kind == .unsupportedSchemaVersion && error?.userMessage.contains("99") == true
                && error?.location == path
        }
        let check = try SQLiteConnection(path: path, mode: .readOnly)
        #expect(try check.queryText("SELECT value FROM meta WHERE name = 'schema_version'") == "99")
        #expect(try check.queryText("SELECT count(*) FROM nodes") == "1")
    }

    @Test func aForeignDatabaseIsRefused() throws {
        let path = directory.file()
        let connection = try SQLiteConnection(path: path)
        try connection.execute("CREATE TABLE other (x)")
        try connection.close()
        #expect { try NamespaceStore(path: path) } throws: { ($0 as? StoreError)?.kind == .notAStore }
    }

    @Test func aFileThatIsNotSQLiteIsRefused() throws {
        let path = directory.file()
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: path))
        #expect { try NamespaceStore(path: path) } throws: { error in
            (error as? StoreError)?.sqlite?.resultCode == SQLITE_NOTADB
        }
    }

    @Test func anUnwritableLocationIsRefused() {
        #expect { try NamespaceStore(path: directory.path + "/missing/dir/x.sqlite") } throws: { error in
            (error as? StoreError)?.kind == .fileSystem
        }
    }

    @Test func newFilesArePrivate() throws {
        let path = directory.file()
        _ = try NamespaceStore(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test func writesAreInTheWALBeforeACheckpoint() throws {
        // With WAL + synchronous=FULL a commit is durable once it is in the -wal file; the main file may
        // still be untouched. A reader that opens the files afterwards (as after kill -9) sees the write.
        let path = directory.file()
        let store = try NamespaceStore(path: path)
        try commit(store, [leaf("durable", .int(1))])
        let walSize = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        #expect(walSize > 0)
        let reader = try SQLiteConnection(path: path, mode: .readOnly)
        #expect(try reader.queryText("SELECT value FROM nodes WHERE key = 'durable'") == "1")
        #expect(try reader.queryText("PRAGMA journal_mode") == "wal")
        #expect(try reader.queryText("PRAGMA application_id") == String(StoreSchema.applicationID))
    }
}
