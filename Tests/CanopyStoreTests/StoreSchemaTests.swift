// StoreSchemaTests -- path keys, and that subtree deletes are index searches, not scans.
import Testing

@testable import CanopyStore

@Suite struct StoreSchemaTests {
    @Test(arguments: [([String](), ""), (["a"], "a"), (["a", "b c", "0"], "a/b c/0"), (["é", "🌲"], "é/🌲")])
    func keysJoinPathsWithSlashes(path: [String], key: String) throws {
        #expect(try StoreSchema.key(for: path) == key)
        #expect(StoreSchema.path(for: key) == path)
    }

    @Test(arguments: [["a", ""], ["a/b"], ["", "b"]])
    func refusesKeysThatWouldAlias(_ path: [String]) {
        #expect { try StoreSchema.key(for: path) } throws: { ($0 as? StoreError)?.kind == .invalidMutation }
    }

    @Test(arguments: [StoreSchema.SQL.deleteKey, StoreSchema.SQL.deleteRange])
    func subtreeDeletesSearchThePrimaryKey(sql: String) throws {
        let directory = TemporaryDirectory()
        _ = try NamespaceStore(path: directory.file())
        let connection = try SQLiteConnection(path: directory.file(), mode: .readOnly)
        let plan = try connection.prepare("EXPLAIN QUERY PLAN " + sql)
        var details: [String] = []
        while try plan.step() { details.append(plan.text(at: 3) ?? "") }
        #expect(details.contains { $0.hasPrefix("SEARCH nodes USING PRIMARY KEY") }, "plan: \(details)")
        #expect(!details.contains { $0.hasPrefix("SCAN") }, "plan: \(details)")
    }
}
