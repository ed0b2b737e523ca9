// PublishEngineTests -- the writes of publish, per-item publish/unpublish, revert and rollback.

import CanopyCore
import CanopyPublish
import Testing

@Suite struct PublishEngineTests {
    static let tierItem: JSONValue = ["order": 1, "type": "text", "tierIds": [101], "title": "VIP"]
    static let userItem: JSONValue = [
        "order": 2, "type": "text", "attendeeIds": ["u1"], "title": "Yours",
    ]
    static let globalItem: JSONValue = [
        "order": 0, "type": "text", "checkAll": true, "title": "Hello",
    ]

    func publish(_ root: Node, now: Int64 = 1_000) throws -> Node {
        root.applying(try PublishEngine.publishWrites(root: root, now: now, publisher: "admin"))
    }

    func paths(_ writes: [(path: Path, node: Node)]) -> [String] { writes.map(\.path.description) }

    @Test func firstPublishWritesEveryLocationAndBookkeeping() throws {
        let root = event(pending: ["a": Self.globalItem, "b": Self.tierItem, "c": Self.userItem])
        let writes = try PublishEngine.publishWrites(root: root, now: 1_000, publisher: "admin")
        let written = paths(writes)
        #expect(written.contains("/public/admin/content"))
        #expect(written.contains("/private/adminable/tiers/101/content"))
        #expect(written.contains("/private/adminable/users/u1/content"))
        #expect(written.contains("/private/admin/content"))
        #expect(written.contains("/private/admin/lastPublishedAt"))
        #expect(written.filter { $0.hasPrefix("/private/admin/publishHistory/") }.count == 1)
        let after = root.applying(writes)
        #expect(after.node(at: PublishLayout.content) == root.node(at: PublishLayout.pendingContent))
        #expect(after.node(at: PublishLayout.lastPublishedAt).value == .int(1_000))
    }

    @Test func republishingUnchangedContentTouchesNoDerivedLocation() throws {
        let root = try publish(
            event(pending: ["a": Self.globalItem, "b": Self.tierItem, "c": Self.userItem]))
        let written = paths(try PublishEngine.publishWrites(root: root, now: 2_000, publisher: "admin"))
        #expect(written.filter { !$0.hasPrefix("/private/admin/") }.isEmpty)
        #expect(!written.contains("/private/admin/content"))
        #expect(written.contains("/private/admin/lastPublishedAt"))
    }

    @Test func onlyChangedLocationsAreWritten() throws {
        let root = try publish(
            event(pending: ["a": Self.globalItem, "b": Self.tierItem, "c": Self.userItem]))
        let edited = root.setting(
            Node(leaf: .string("VIP v2")),
            at: PublishLayout.pendingContent.appending(Path(segments: ["b", "title"])))
        let writes = try PublishEngine.publishWrites(root: edited, now: 2_000, publisher: nil)
        let written = paths(writes)
        // Item by item: the edited item at its own path in the one location it reaches, and in `content`.
        #expect(written.filter { !$0.hasPrefix("/private/admin/") } == ["/private/adminable/tiers/101/content/b"])
        #expect(written.filter { $0.hasPrefix("/private/admin/content") } == ["/private/admin/content/b"])
        let after = root.applying(writes)
        #expect(after.node(at: PublishLayout.tierContent("101")).child("b").child("title").value == "VIP v2")
        #expect(after.node(at: PublishLayout.content) == edited.node(at: PublishLayout.pendingContent))
    }

    /// One item edited among 1,000: the writes are that item in the locations it reaches, `content/<key>`, the
    /// bookkeeping, and that item's one new version — not a copy of the other 999 anywhere.
    @Test func anIncrementalPublishWritesOnlyTheEditedItem() throws {
        var pending: [JSONMember] = []
        for i in 0..<1000 {
            let key = "item" + String(i)
            let item: JSONValue = i % 3 == 0 ? ["order": .int(Int64(i)), "type": "text", "checkAll": true]
                : ["order": .int(Int64(i)), "type": "text", "tierIds": [.int(Int64(100 + i % 5))]]
            pending.append(JSONMember(key, item))
        }
        let root = try publish(event(pending: .object(pending)))
        let edited = root.setting(
            Node(leaf: .string("edited")), at: PublishLayout.pendingContent.appending(Path(segments: ["item7", "title"])))
        let writes = try PublishEngine.publishWrites(root: edited, now: 2_000, publisher: nil)
        let history = writes.filter { $0.path.description.hasPrefix("/private/admin/publishHistory/") }
        let versions = writes.filter { $0.path.description.hasPrefix("/private/admin/publishedVersions/") }
        #expect(history.count == 1)
        let item7 = edited.node(at: PublishLayout.pendingContent).child("item7")
        #expect(versions.map(\.path.lastKey) == [PublishHistory.versionKey(item7)])
        let others = paths(writes.filter { write in
            !history.contains { $0.path == write.path } && !versions.contains { $0.path == write.path }
        })
        #expect(others == ["/private/adminable/tiers/102/content/item7", "/private/admin/content/item7",
            "/private/admin/lastPublishedAt"])
        let after = edited.applying(writes)
        #expect(after.node(at: PublishLayout.content) == edited.node(at: PublishLayout.pendingContent))
        #expect(after.node(at: PublishLayout.tierContent("102")).child("item7").child("title").value == "edited")
        #expect(after.node(at: PublishLayout.tierContent("102")).childCount == 134)
    }

    @Test func aUserWhoLosesEverythingLosesTheirContentButKeepsSiblings() throws {
        var root = try publish(event(pending: ["a": Self.globalItem, "c": Self.userItem]))
        let profile = PublishLayout.users.child("u1").child("profile")
        root = root.setting(Node(leaf: .string("kept")), at: profile)
        root = root.setting(.empty, at: PublishLayout.pendingContent.child("c"))
        let writes = try PublishEngine.publishWrites(root: root, now: 2_000, publisher: nil)
        let userWrite = try #require(writes.first { $0.path == PublishLayout.userContent("u1") })
        #expect(userWrite.node.isEmpty)
        let after = root.applying(writes)
        #expect(after.node(at: PublishLayout.userContent("u1")).isEmpty)
        #expect(after.node(at: profile).value == .string("kept"))
        #expect(!paths(writes).contains("/public/admin/content"))
    }

    @Test func writesNeverOverlap() throws {
        var root = try publish(
            event(pending: ["a": Self.globalItem, "b": Self.tierItem, "c": Self.userItem]))
        root = root.setting(
            Node.literal(["d": ["order": 3, "groupIds": [7]]]), at: PublishLayout.pendingContent)
        let writes = try PublishEngine.publishWrites(root: root, now: 2_000, publisher: nil)
        for (i, a) in writes.enumerated() {
            for b in writes[(i + 1)...] {
                #expect(!a.path.isAncestorOrSelf(of: b.path) && !b.path.isAncestorOrSelf(of: a.path))
            }
        }
    }

    @Test func nonNumericOrderIsRefusedNamingTheKey() throws {
        let root = event(pending: ["good": Self.globalItem, "bad": ["order": "first", "type": "text"]])
        #expect(throws: PublishError(.nonNumericOrder, key: "bad", field: "order")) {
            try PublishEngine.publishWrites(root: root, now: 1, publisher: nil)
        }
        let error = PublishError(.nonNumericOrder, key: "bad", field: "order")
        #expect(error.userMessage.contains("'bad'") && error.userMessage.contains("order"))
        #expect(error.code == "invalid_item")
    }

    @Test func missingOrderIsRefused() {
        let root = event(pending: ["x": ["type": "text", "title": "no order"]])
        #expect(throws: PublishError(.missingOrder, key: "x", field: "order")) {
            try PublishEngine.publishWrites(root: root, now: 1, publisher: nil)
        }
    }

    @Test func revertCopiesContentIntoPending() throws {
        var root = try publish(event(pending: ["a": Self.globalItem]))
        root = root.setting(Node.literal(Self.tierItem), at: PublishLayout.pendingContent.child("b"))
        let writes = PublishEngine.revertWrites(root: root)
        #expect(writes.count == 1)
        let after = root.applying(writes)
        #expect(after.node(at: PublishLayout.pendingContent) == root.node(at: PublishLayout.content))
    }

    @Test func publishingOneItemLeavesOtherDraftsUnpublished() throws {
        var root = try publish(event(pending: ["a": Self.globalItem, "b": Self.tierItem]))
        root = root.setting(
            Node(leaf: .string("new")),
            at: PublishLayout.pendingContent.appending(Path(segments: ["a", "title"])))
        root = root.setting(Node.literal(Self.userItem), at: PublishLayout.pendingContent.child("c"))
        let after = root.applying(
            try PublishEngine.publishItemWrites(root: root, key: "c", now: 2_000, publisher: nil))
        #expect(after.node(at: PublishLayout.content).childKeys == ["a", "b", "c"])
        #expect(
            after.node(at: PublishLayout.content).child("a").child("title").value == .string("Hello"))
        #expect(after.node(at: PublishLayout.userContent("u1")).childKeys == ["c"])
    }

    @Test func publishingADeletedItemRemovesIt() throws {
        var root = try publish(event(pending: ["a": Self.globalItem, "b": Self.tierItem]))
        root = root.setting(.empty, at: PublishLayout.pendingContent.child("b"))
        let after = root.applying(
            try PublishEngine.publishItemWrites(root: root, key: "b", now: 2_000, publisher: nil))
        #expect(after.node(at: PublishLayout.content).childKeys == ["a"])
        #expect(after.node(at: PublishLayout.tierContent("101")).isEmpty)
        #expect(throws: PublishError(.unknownItem, key: "zz")) {
            try PublishEngine.publishItemWrites(root: root, key: "zz", now: 1, publisher: nil)
        }
    }

    @Test func unpublishRemovesFromEveryLocationButKeepsTheDraft() throws {
        let root = try publish(event(pending: ["a": Self.globalItem, "b": Self.tierItem]))
        let after = root.applying(
            try PublishEngine.unpublishItemWrites(root: root, key: "a", now: 2_000, publisher: nil))
        #expect(after.node(at: PublishLayout.publicContent).isEmpty)
        #expect(after.node(at: PublishLayout.content).childKeys == ["b"])
        #expect(after.node(at: PublishLayout.pendingContent).childKeys == ["a", "b"])
        #expect(throws: PublishError(.notPublished, key: "zz")) {
            try PublishEngine.unpublishItemWrites(root: root, key: "zz", now: 1, publisher: nil)
        }
    }

    @Test func rollbackRepublishesASnapshot() throws {
        let first = try publish(event(pending: ["a": Self.globalItem]), now: 1_000)
        let firstID = try #require(first.node(at: PublishLayout.history).childKeys.first)
        let second = try publish(
            first.setting(Node.literal(["b": Self.tierItem]), at: PublishLayout.pendingContent),
            now: 2_000)
        #expect(second.node(at: PublishLayout.publicContent).isEmpty)
        let rolled = second.applying(
            try PublishEngine.rollbackWrites(
                root: second, historyID: firstID, now: 3_000, publisher: "ops"))
        #expect(rolled.node(at: PublishLayout.content) == first.node(at: PublishLayout.content))
        #expect(rolled.node(at: PublishLayout.pendingContent) == first.node(at: PublishLayout.content))
        #expect(rolled.node(at: PublishLayout.publicContent).childKeys == ["a"])
        #expect(rolled.node(at: PublishLayout.tierContent("101")).isEmpty)
        let history = rolled.node(at: PublishLayout.history)
        #expect(history.childCount == 3)
        #expect(history.children.last?.node.child("rollbackOf").value == .string(firstID))
        #expect(throws: PublishError(.unknownHistoryEntry, key: "nope")) {
            try PublishEngine.rollbackWrites(root: second, historyID: "nope", now: 1, publisher: nil)
        }
    }

    @Test func historyRecordsWhoWhenCountAndHashAndKeepsTwenty() throws {
        var root = event(pending: ["a": Self.globalItem])
        for i in 0..<25 {
            root = root.setting(
                Node(leaf: .int(Int64(i))),
                at: PublishLayout.pendingContent.appending(Path(segments: ["a", "rev"])))
            root = try publish(root, now: 1_700_000_000_000 + Int64(i / 2))  // two publishes per millisecond
        }
        let history = root.node(at: PublishLayout.history)
        #expect(history.childCount == PublishHistory.limit)
        let newest = try #require(history.children.last?.node)
        #expect(newest.child("publisher").value == .string("admin"))
        #expect(newest.child("publishedAt").value == .int(1_700_000_000_012))
        #expect(newest.child("itemCount").value == .int(1))
        #expect(newest.child("contentHash").value == .string(root.node(at: PublishLayout.content).hash))
        #expect(PublishHistory.snapshot(of: newest, root: root)?.child("a").child("rev").value == .int(24))
        let oldest = try #require(history.children.first?.node)
        #expect(PublishHistory.snapshot(of: oldest, root: root)?.child("a").child("rev").value == .int(5))
        // Each distinct item body is stored once; those only dropped entries named are gone with them.
        #expect(root.node(at: PublishLayout.versions).childCount == PublishHistory.limit)
    }

    /// The parsed items of the last publish are reused for unchanged item nodes, and the writes are the same as
    /// without the cache: in particular an edited item is parsed again, not taken from the cache.
    @Test func parsedItemsAreReusedAndChangeNothing() throws {
        let cache = ParsedItems()
        var root = event(pending: ["a": Self.globalItem, "b": Self.tierItem, "c": Self.userItem])
        root = root.applying(try PublishEngine.publishWrites(root: root, now: 1_000, publisher: nil, cache: cache))
        #expect(cache.count == 3)
        for (title, now) in [("one", 2_000), ("two", 3_000)] as [(String, Int64)] {
            root = root.setting(
                Node(leaf: .string(title)), at: PublishLayout.pendingContent.appending(Path(segments: ["b", "title"])))
            let cached = try PublishEngine.publishWrites(root: root, now: now, publisher: nil, cache: cache)
            let plain = try PublishEngine.publishWrites(root: root, now: now, publisher: nil)
            #expect(paths(cached) == paths(plain))
            #expect(zip(cached, plain).allSatisfy { $0.node == $1.node })
            root = root.applying(cached)
            #expect(root.node(at: PublishLayout.tierContent("101")).child("b").child("title").value == .string(title))
        }
        // The cache holds the last publish's items only.
        root = root.setting(.empty, at: PublishLayout.pendingContent.child("c"))
        _ = try PublishEngine.publishWrites(root: root, now: 4_000, publisher: nil, cache: cache)
        #expect(cache.count == 2)
    }

    @Test func versionsAreSharedAcrossEntriesAndAnOldEntryHoldingItsContentStillRollsBack() throws {
        var root = try publish(event(pending: ["a": Self.globalItem, "b": Self.tierItem]), now: 1_000)
        root = root.setting(Node(leaf: .string("v2")), at: PublishLayout.pendingContent.appending(Path(segments: ["b", "title"])))
        root = try publish(root, now: 2_000)
        // Item a did not change: both entries name its one version; b has two.
        #expect(root.node(at: PublishLayout.versions).childCount == 3)
        // An entry in the layout before versions: the snapshot whole under `content`.
        let legacy = Node.literal(["publishedAt": 500, "itemCount": 1, "content": ["z": Self.userItem]])
        root = root.setting(legacy, at: PublishLayout.history.child("-legacy"))
        let rolled = root.applying(
            try PublishEngine.rollbackWrites(root: root, historyID: "-legacy", now: 3_000, publisher: nil))
        #expect(rolled.node(at: PublishLayout.content).childKeys == ["z"])
        #expect(rolled.node(at: PublishLayout.userContent("u1")).childKeys == ["z"])
        // A version that went missing makes the entry unusable, as a missing snapshot does.
        let first = try #require(root.node(at: PublishLayout.history).childKeys.first { $0 != "-legacy" })
        let broken = root.setting(.empty, at: PublishLayout.versions)
        #expect(throws: PublishError(.unknownHistoryEntry, key: first)) {
            try PublishEngine.rollbackWrites(root: broken, historyID: first, now: 3_000, publisher: nil)
        }
    }

    @Test func publishingAnEmptyDraftClearsEveryDerivedLocation() throws {
        var root = try publish(try Seed.event())
        root = root.setting(.empty, at: PublishLayout.pendingContent)
        let after = try publish(root, now: 2_000)
        #expect(after.node(at: PublishLayout.publicContent).isEmpty)
        #expect(after.node(at: PublishLayout.users).isEmpty)
        #expect(after.node(at: PublishLayout.tiers).isEmpty)
        #expect(after.node(at: PublishLayout.content).isEmpty)
        #expect(after.node(at: PublishLayout.history).children.last?.node.child("itemCount").value == .int(0))
    }

    /// After a foreign rewrite of the drafts and every published location with the same data (new instances, no hash),
    /// a published item found equal by a walk adopts the hash the history record computes for its draft: the
    /// next publish compares the two by hash instead of walking them again.
    @Test func aPublishedItemFoundEqualToItsDraftAdoptsItsHash() throws {
        let cache = ParsedItems()
        func publish(_ root: Node, now: Int64) throws -> Node {
            root.applying(try PublishEngine.publishWrites(root: root, now: now, publisher: nil, cache: cache))
        }
        var root = try publish(event(pending: ["a": Self.globalItem, "b": Self.tierItem]), now: 1_000)
        // As the seed design's replay does: every location written again with what it holds.
        for path in [PublishLayout.pendingContent, PublishLayout.content, PublishLayout.publicContent, PublishLayout.tiers] {
            root = root.setting(Node.literal(root.node(at: path).json()), at: path)
        }
        #expect(!root.node(at: PublishLayout.content).child("a").isHashCached)
        root = root.setting(
            Node(leaf: .string("v2")), at: PublishLayout.pendingContent.appending(Path(segments: ["b", "title"])))
        root = try publish(root, now: 2_000)
        #expect(root.node(at: PublishLayout.content).child("a").isHashCached)
        #expect(root.node(at: PublishLayout.content).child("b").child("title").value == .string("v2"))
    }
}

/// `readsSameInputs`: which writes leave what the engine computed from the tree before them valid.
@Suite struct PublishInputsTests {
    static let root = try! Node.from(
        json: JSONValue.parse(
            #"""
            {"private": {"admin": {"pendingContent": {"a": {"order": 1, "type": "text", "text": "t", "checkAll": true}}},
                         "adminable": {"users": {"u1": {"content": {"a": {"text": "t"}}, "profile": "p"},
                                                 "u2": {"profile": "q"}},
                                       "tiers": {"1": {"content": {"a": {"text": "t"}}}}}},
             "public": {"admin": {"content": {"a": {"text": "t"}}}},
             "chat": {"m": 1}}
            """#))

    @Test(arguments: [
        ("chat/n", #""hi""#, true), ("private/adminable/users/u1/profile", #""new""#, true),
        ("private/adminable/users/u3/profile", #""new""#, true), ("private/adminable/users/u2", "null", true),
        ("public/other", "1", true), ("private/adminable/else", "1", true),
        ("private/admin/pendingContent/a/text", #""edited""#, false), ("private/admin/settings/isolateGroups", "true", false),
        ("private/admin/anything", "1", false), ("public/admin/content/b", "1", false),
        ("private/adminable/users/u1/content/b", "1", false), ("private/adminable/users/u3/content/a", "1", false),
        ("private/adminable/users/u1", "null", false), ("private/adminable/users/u1", #""leaf""#, false),
        ("private/adminable/tiers/1/content", "null", false), ("private/adminable/groups/g/content/a", "1", false),
        ("private/adminable", "null", false),
    ])
    func aWriteChangesTheInputsOnlyWhereTheEngineReads(path: String, value: String, same: Bool) throws {
        let written = Self.root.setting(try Node.from(json: JSONValue.parse(value)), at: try Path(parsing: path))
        #expect(PublishEngine.readsSameInputs(Self.root, written) == same)
    }

    @Test func equalDataWrittenAgainIsStillAChange() throws {
        #expect(PublishEngine.readsSameInputs(Self.root, Self.root))
        let content = Self.root.node(at: PublishLayout.userContent("u1"))
        let copy = try Node.from(json: content.json())
        #expect(copy !== content)
        #expect(!PublishEngine.readsSameInputs(Self.root, Self.root.setting(copy, at: PublishLayout.userContent("u1"))))
    }
}
