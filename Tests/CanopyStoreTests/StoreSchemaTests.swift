// StoreSchemaTests -- path keys, and that subtree deletes are index searches, not scans.
import Testing

@testable import CanopyStore

@Suite struct StoreSchemaTests {
    @Test(arguments: [([String](), ""), (["a"], "a"), (["a", "b c", "0"], "a/b c/0"), (["é", "🌲"], "é/🌲")])
    func keysJoinPathsWithSlashes(path: [String], key: String) throws {
        #expect(try StoreSchema.key(for: path) == key)
        #expect(StoreSchema.path(for: key) == path)
    }

    /// Every path comes back from its key, whatever the characters around the slashes: a segment that starts
    /// with a combining accent is its own segment (splitting the key as a `String` joined "/" and the accent
    /// into one character and read `a/\u{301}b` back as one key), and emoji sequences stay whole.
    @Test(arguments: [["a", "\u{301}b"], ["e\u{301}", "x"], ["🌲", "👩‍👩‍👧", "z"], ["ü", "\u{10FFFF}"], ["\u{200D}", "\u{FE0F}"]])
    func pathsComeBackFromTheirKeys(path: [String]) throws {
        #expect(StoreSchema.path(for: try StoreSchema.key(for: path)) == path)
    }

    @Test(arguments: ["a/", "/", "a//b"])
    func keysOfNoValidPathSplitAtEverySlash(key: String) {
        #expect(StoreSchema.path(for: key) == key.split(separator: "/", omittingEmptySubsequences: false).map(String.init))
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
