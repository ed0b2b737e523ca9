// PublishHistoryTests -- history ids increase with time and within one millisecond; an entry names its item
// versions in one text; entries of the earlier layout still roll back; versions go with the last entry naming them.

import CanopyCore
@testable import CanopyPublish
import Testing

@Suite struct PublishHistoryTests {
    @Test func idsArePushIDShapedAndOrderedByTime() {
        let a = PublishHistory.nextID(existing: .empty, now: 1_700_000_000_000)
        let b = PublishHistory.nextID(existing: .empty, now: 1_700_000_000_001)
        #expect(a.utf8.count == 20 && b.utf8.count == 20)
        #expect(compareKeys(a, b) < 0)
        #expect(a.hasSuffix("------------"))
    }

    @Test func sameMillisecondOrEarlierClockStillIncreases() {
        var history = Node.empty
        var previous = ""
        for now: Int64 in [5_000, 5_000, 5_000, 4_000, 5_001] {
            let id = PublishHistory.nextID(existing: history, now: now)
            #expect(compareKeys(previous, id) < 0, "\(previous) then \(id)")
            history = history.settingChild(id, Node(leaf: .int(now)))
            previous = id
        }
        #expect(history.childCount == 5)
    }

    @Test func aLastIdOfAllZsGrowsLonger() {
        let last = String(repeating: "z", count: 20)
        let history = Node.literal(.object([JSONMember(last, 1)]))
        let id = PublishHistory.nextID(existing: history, now: 0)
        #expect(compareKeys(last, id) < 0)
    }

    @Test func recordHoldsTheFacts() {
        let content = Node.literal(["a": ["order": 1]])
        let record = PublishHistory.record(content: content, now: 42, publisher: nil)
        #expect(record.child("publishedAt").value == .int(42))
        #expect(record.child("itemCount").value == .int(1))
        #expect(record.child("contentHash").value == .string(content.hash))
        #expect(!record.hasChild("content"))
        let version = PublishHistory.versionKey(content.child("a"))
        #expect(record.child("versions").value == .string(#"{"a":"\#(version)"}"#))
        #expect(PublishHistory.itemVersions(of: record)?.map(\.version) == [version])
        #expect(!record.hasChild("items"))
        #expect(!version.contains("/") && !version.contains("+") && !version.contains("="))
        #expect(!record.hasChild("publisher"))
    }

    static let item: JSONValue = ["order": 0, "type": "text", "checkAll": true, "title": "Hello"]

    func publish(_ root: Node, now: Int64, cache: ParsedItems? = nil) throws -> (Node, [(path: Path, node: Node)]) {
        let writes = try PublishEngine.publishWrites(root: root, now: now, publisher: "admin", cache: cache)
        return (root.applying(writes), writes)
    }

    /// Every version an entry names is stored, and (`exactly`) none that no entry names.
    func expectVersionsMatchEntries(_ root: Node, exactly: Bool = true, _ comment: Comment? = nil) {
        var named = Set<String>()
        for (_, entry) in root.node(at: PublishLayout.history).children {
            for (_, version) in PublishHistory.itemVersions(of: entry) ?? [] { named.insert(version) }
        }
        let stored = Set(root.node(at: PublishLayout.versions).childKeys)
        #expect(exactly ? stored == named : stored.isSuperset(of: named), comment)
    }

    /// An entry of the layout before `versions` (one `items` child per item) still rolls back, and its versions
    /// are kept while it names them and deleted with it.
    @Test func anEntryOfTheItemsLayoutRollsBackAndItsVersionsGoWithIt() throws {
        let z: JSONValue = ["order": 1, "type": "text", "checkAll": true, "title": "Only the old entry names me"]
        var (root, _) = try publish(event(pending: ["z": z]), now: 500)
        let oldID = try #require(root.node(at: PublishLayout.history).childKeys.first)
        let zVersion = PublishHistory.versionKey(root.node(at: PublishLayout.content).child("z"))
        let old = Node.literal(["publishedAt": 500, "itemCount": 1, "items": ["z": .string(zVersion)]])
        root = root.setting(old, at: PublishLayout.history.child(oldID))
        root = root.setting(Node.literal(["a": Self.item]), at: PublishLayout.pendingContent)
        (root, _) = try publish(root, now: 1_000)
        let rolled = root.applying(
            try PublishEngine.rollbackWrites(root: root, historyID: oldID, now: 1_500, publisher: nil))
        #expect(rolled.node(at: PublishLayout.content).childKeys == ["z"])
        #expect(rolled.node(at: PublishLayout.publicContent).childKeys == ["z"])
        // Nineteen more publishes: the old entry is the one dropped by the last, and z's version with it.
        for i in 0..<PublishHistory.limit - 1 {
            #expect(root.node(at: PublishLayout.versions).hasChild(zVersion))
            expectVersionsMatchEntries(root)
            root = root.setting(
                Node(leaf: .int(Int64(i))), at: PublishLayout.pendingContent.appending(Path(segments: ["a", "rev"])))
            (root, _) = try publish(root, now: 2_000 + Int64(i))
        }
        #expect(!root.node(at: PublishLayout.history).hasChild(oldID))
        #expect(!root.node(at: PublishLayout.versions).hasChild(zVersion))
        expectVersionsMatchEntries(root)
    }

    /// The names a publish keeps in `ParsedItems` for the next change no write: with and without the cache, the
    /// same writes, through edits, rollbacks to versions only old entries name, and entries rewritten by hand.
    @Test func theHistoryNamesKeptForTheNextPublishChangeNoWrite() throws {
        let cache = ParsedItems()
        var root = event(pending: ["a": Self.item, "b": Self.item, "c": Self.item])
        for step in 0..<3 * PublishHistory.limit {
            let now = Int64(1_000 + step)
            let ids = root.node(at: PublishLayout.history).childKeys
            var writes: [(path: Path, node: Node)]
            var plain: [(path: Path, node: Node)]
            if step % 7 == 6, ids.count > 10 {
                // Back to an old snapshot: its versions are named again, by the newest entry.
                writes = try PublishEngine.rollbackWrites(
                    root: root, historyID: ids[ids.count - 10], now: now, publisher: nil, cache: cache)
                plain = try PublishEngine.rollbackWrites(
                    root: root, historyID: ids[ids.count - 10], now: now, publisher: nil)
            } else {
                if step % 11 == 10, let newest = ids.last, let oldest = ids.first {
                    // Someone rewrites an entry by hand: it now names what the oldest one does.
                    let text = root.node(at: PublishLayout.history.child(oldest)).child("versions")
                    root = root.setting(text, at: PublishLayout.history.child(newest).child("versions"))
                }
                let key = ["a", "b", "c"][step % 3]
                root = root.setting(
                    Node(leaf: .int(Int64(step))),
                    at: PublishLayout.pendingContent.appending(Path(segments: [key, "rev"])))
                writes = try PublishEngine.publishWrites(root: root, now: now, publisher: nil, cache: cache)
                plain = try PublishEngine.publishWrites(root: root, now: now, publisher: nil)
            }
            #expect(writes.map(\.path) == plain.map(\.path), "step \(step)")
            #expect(zip(writes, plain).allSatisfy { $0.node == $1.node }, "step \(step)")
            root = root.applying(writes)
            // An entry rewritten by hand leaves the versions it named before: only an entry dropped deletes any.
            expectVersionsMatchEntries(root, exactly: false, "step \(step)")
        }
        #expect(root.node(at: PublishLayout.history).childCount == PublishHistory.limit)
    }

    /// A record whose `versions` text would pass the string limit keeps one child per item under `items`, and is
    /// read the same way.
    @Test func aRecordTooLongForOneStringKeepsOneChildPerItem() throws {
        let version = PublishHistory.versionKey(Node.literal(["order": 1]))
        let key = String(repeating: "k", count: 200)
        let versions = (0..<Node.maxStringBytes / 200).map { (key: "\(key)\($0)", version: version) }
        let record = PublishHistory.record(
            content: Node.literal(["a": 1]), versions: versions, now: 42, publisher: nil, rollbackOf: nil)
        #expect(!record.hasChild("versions"))
        #expect(record.child("items").childCount == versions.count)
        let read = try #require(PublishHistory.itemVersions(of: record))
        #expect(read.count == versions.count)
        #expect(read.allSatisfy { $0.version == version })
        // Under the limit: one string.
        let short = PublishHistory.record(
            content: Node.literal(["a": 1]), versions: Array(versions.prefix(1_000)), now: 42, publisher: nil,
            rollbackOf: nil)
        #expect(short.hasChild("versions") && !short.hasChild("items"))
    }
}
