// NamespaceStoreTests -- apply/reload round trips, subtree deletes, priorities, group commit, failures.
import CanopyCore
import Foundation
import Synchronization
import Testing

@testable import CanopyStore

@Suite struct NamespaceStoreTests {
    let directory = TemporaryDirectory()

    private func open(_ options: StoreOptions = StoreOptions()) throws -> NamespaceStore {
        try NamespaceStore(path: directory.file(), options: options)
    }

    @Test func newStoreIsEmptyAtRevisionZero() throws {
        let store = try open()
        #expect(store.revision == 0)
        #expect(try rows(of: store) == [])
    }

    @Test func rootLeafRoundTrips() throws {
        let store = try open()
        #expect(try commit(store, [leaf("", .string("root"))]) == 1)
        #expect(try rows(of: store) == ["/=\"root\""])
        #expect(try commit(store, [delete(""), leaf("a", .int(1)), leaf("b/c", .bool(true))]) == 2)
        #expect(try rows(of: store) == ["/a=1", "/b/c=true"])
    }

    @Test func deepSubtreeReplaceLeavesTheRestAlone() throws {
        let store = try open()
        let initial: JSONValue = .object([
            JSONMember(
                "users",
                .object([
                    JSONMember(
                        "ann",
                        .object([
                            JSONMember("age", .int(30)), JSONMember("tags", .array([.string("x"), .string("y")])),
                        ])),
                    JSONMember("bob", .object([JSONMember("age", .int(41))])),
                ]))
        ])
        try commit(store, StoreMutation.replacingSubtree(at: [], with: initial))
        #expect(
            try rows(of: store) == [
                "/users/ann/age=30", "/users/ann/tags/0=\"x\"", "/users/ann/tags/1=\"y\"", "/users/bob/age=41",
            ])

        try commit(
            store,
            StoreMutation.replacingSubtree(at: ["users", "ann"], with: .object([JSONMember("name", .string("Ann"))])))
        #expect(try rows(of: store) == ["/users/ann/name=\"Ann\"", "/users/bob/age=41"])
    }

    @Test func deletingASubtreeSparesSiblingsThatShareItsPrefix() throws {
        let store = try open()
        try commit(
            store,
            [
                leaf("a", .int(0)), leaf("a b", .int(1)), leaf("a0", .int(2)), leaf("a-1", .int(3)),
                leaf("ab/c", .int(4)), leaf("b/a", .int(5)),
            ])
        try commit(store, [delete("a")])
        #expect(try rows(of: store) == ["/a b=1", "/a-1=3", "/a0=2", "/ab/c=4", "/b/a=5"])

        try commit(store, [delete("a b"), leaf("x/a/b", .int(6)), leaf("x/a0", .int(7)), leaf("x/a b", .int(8))])
        try commit(store, [delete("x/a")])
        #expect(try rows(of: store) == ["/a-1=3", "/a0=2", "/ab/c=4", "/b/a=5", "/x/a b=8", "/x/a0=7"])
    }

    @Test func prioritiesOfLeavesAndInternalNodesRoundTrip() throws {
        let store = try open()
        try commit(
            store,
            [
                leaf("a/b", .string("v"), priority: .int(5)),
                .putPriority(path: ["a"], priority: .string("high")),
                leaf("c", .double(2.5), priority: .double(1.25)),
            ])
        #expect(try rows(of: store) == ["/a^\"high\"", "/a/b=\"v\"^5", "/c=2.5^1.25"])

        var entries: [StoredEntry] = []
        try store.loadAll { entries.append($0) }
        #expect(entries.map(\.kind) == [.priority, .leaf, .leaf])
        #expect(text(entries[0].value) == "null")

        try commit(store, [delete("a")])
        #expect(try rows(of: store) == ["/c=2.5^1.25"])
    }

    @Test func exportFormatPrioritiesBecomeRows() throws {
        let store = try open()
        let value: JSONValue = .object([
            JSONMember(".priority", .int(1)),
            JSONMember("x", .object([JSONMember(".value", .string("v")), JSONMember(".priority", .string("p"))])),
            JSONMember("empty", .object([JSONMember(".priority", .int(2))])),
        ])
        try commit(store, StoreMutation.replacingSubtree(at: ["n"], with: value))
        #expect(try rows(of: store) == ["/n^1", "/n/x=\"v\"^\"p\""])
    }

    @Test func aTreeSurvivesAWriteAndReloadThroughNodeBuilder() throws {
        let json = try JSONValue.parse(
            """
            {"rooms": {".priority": 3, "a": {"title": "hi", "n": 2.5, "ok": true, "tags": ["x", "y"]},
                       "a b": {".value": "v", ".priority": "p"}, "a0": -1},
             "users": {"ann": {"age": 30}}}
            """)
        let tree = try Node.from(json: json)
        do {
            let store = try open()
            try commit(store, StoreMutation.replacingSubtree(at: [], with: tree))
            store.flushAndClose()
        }
        let reopened = try open()
        let builder = NodeBuilder()
        try reopened.loadAll { entry in try builder.add(entry.record) }
        #expect(builder.build() == tree)

        // Replace one subtree with another tree, then reload again.
        let room = try Node.from(json: try JSONValue.parse(#"{"title": "new", "deep": {"er": {"est": 1}}}"#))
        try commit(reopened, StoreMutation.replacingSubtree(at: ["rooms", "a"], with: room))
        let again = NodeBuilder()
        try reopened.loadAll { entry in try again.add(entry.record) }
        let expected = tree.setting(room, at: Path(segments: ["rooms", "a"]))
        #expect(again.build() == expected)
    }

    @Test func reopeningKeepsRowsAndRevision() throws {
        do {
            let store = try open()
            try commit(store, [leaf("a/b", .string("x"))])
            try commit(store, [leaf("a/c", .int(-7), priority: .string("p"))])
            store.flushAndClose()
        }
        let reopened = try open()
        #expect(reopened.revision == 2)
        #expect(try rows(of: reopened) == ["/a/b=\"x\"", "/a/c=-7^\"p\""])
        #expect(try commit(reopened, [delete("a/b")]) == 3)
    }

    @Test func submitAfterCloseFailsWithClosed() throws {
        let store = try open()
        store.flushAndClose()
        store.flushAndClose()  // idempotent
        let result = write(store, [leaf("a", .int(1))])
        #expect(throws: StoreError(.closed, "the store is closed", location: store.path)) { try result.get() }
    }

    @Test func closeWaitsForQueuedSubmissions() throws {
        let store = try open()
        let completed = Atomic<Int>(0)
        for index in 0..<200 {
            store.submit([leaf("k/\(index)", .int(Int64(index)))]) { result in
                if case .success = result { completed.add(1, ordering: .relaxed) }
            }
        }
        store.flushAndClose()
        #expect(completed.load(ordering: .relaxed) == 200)
        #expect(try rows(of: try open()).count == 200)
    }

    @Test(arguments: [
        StoreMutation.putLeaf(path: ["a", "b/c"], value: .int(1), priority: nil),
        .putLeaf(path: ["a", ""], value: .int(1), priority: nil),
        .putLeaf(path: ["a"], value: .object([]), priority: nil),
        .putLeaf(path: ["a"], value: .double(.nan), priority: nil),
        .putLeaf(path: ["a"], value: .int(1), priority: .array([])),
        .putPriority(path: ["a"], priority: .null),
        .deleteSubtree(path: ["x/"]),
    ])
    func refusedMutationFailsItsSubmissionOnly(bad: StoreMutation) throws {
        let store = try open()
        try commit(store, [leaf("keep", .int(1))])
        let result = write(store, [delete("keep"), leaf("new", .int(2)), bad])
        #expect { try result.get() } throws: { ($0 as? StoreError)?.kind == .invalidMutation }
        #expect(try rows(of: store) == ["/keep=1"])
        #expect(store.revision == 1)
        #expect(try commit(store, [leaf("after", .int(3))]) == 2)
    }
    @Test(arguments: [StoreOptions.Synchronous.full, .normal])
    func visibleRunsBeforeCompletionInOrderAndNeverForAFailure(synchronous: StoreOptions.Synchronous) throws {
        let store = try NamespaceStore(path: directory.file(), options: StoreOptions(synchronous: synchronous))
        let events = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let submissions: [(String, [StoreMutation])] = [
            ("a", [leaf("a", .int(1))]),
            ("bad", [leaf("b", .int(2)), .putLeaf(path: ["x"], value: .double(.nan), priority: nil)]),
            ("c", [leaf("c", .int(3))]),
        ]
        for (name, mutations) in submissions {
            store.submit(mutations, visible: { events.withLock { $0.append("visible \(name)") } }) { result in
                events.withLock { $0.append("\(name) \((try? result.get()) != nil ? "ok" : "failed")") }
                done.signal()
            }
        }
        for _ in submissions { done.wait() }
        let seen = events.withLock { $0 }
        #expect(!seen.contains("visible bad"))
        #expect(seen.contains("bad failed"))
        for name in ["a", "c"] {
            let visible = try #require(seen.firstIndex(of: "visible \(name)"))
            let completed = try #require(seen.firstIndex(of: "\(name) ok"))
            #expect(visible < completed)
        }
        #expect(seen.firstIndex(of: "visible a")! < seen.firstIndex(of: "visible c")!)
        #expect(try rows(of: store) == ["/a=1", "/c=3"])
    }
    @Test(arguments: [false, true])
    func aVisibleThatMayWaitRunsAfterTheSyncOtherwiseBefore(mayWait: Bool) throws {
        // The sync is held until the test lets it go: an early `visible` runs meanwhile, a deferred one after it.
        let syncing = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        var options = StoreOptions(synchronous: .full)
        options.beforeSync = {
            syncing.signal()
            proceed.wait()
        }
        let store = try NamespaceStore(path: directory.file(), options: options)
        let events = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        store.submit(
            [leaf("a", .int(1))], visible: { events.withLock { $0.append("visible") } }, visibleMayWaitForSync: mayWait
        ) { result in
            events.withLock { $0.append((try? result.get()) != nil ? "ok" : "failed") }
            done.signal()
        }
        syncing.wait()
        let duringSync = events.withLock { $0 }
        proceed.signal()
        done.wait()
        #expect(duringSync == (mayWait ? [] : ["visible"]))
        #expect(events.withLock { $0 } == ["visible", "ok"])
    }

    @Test func completionsKeepSubmissionOrderThroughTheSyncStage() throws {
        // With `.full`, completions run on the WAL syncer thread, refused submissions included; none may overtake.
        let store = try open()
        let order = Mutex<[Int]>([])
        let visible = Mutex<Set<Int>>([])
        let done = DispatchSemaphore(value: 0)
        let count = 300
        for i in 0..<count {
            let bad = i % 7 == 3
            let mutations: [StoreMutation] =
                bad
                ? [leaf("k\(i)", .int(1)), .putLeaf(path: ["x"], value: .double(.infinity), priority: nil)]
                : [leaf("k\(i)", .int(Int64(i)))]
            store.submit(mutations, visible: { _ = visible.withLock { $0.insert(i) } }) { result in
                let succeeded = (try? result.get()) != nil
                #expect(succeeded == !bad)
                #expect(visible.withLock { $0.contains(i) } == !bad)
                order.withLock { $0.append(i) }
                done.signal()
            }
        }
        for _ in 0..<count { done.wait() }
        #expect(order.withLock { $0 } == Array(0..<count))
        #expect(try rows(of: store).count == (0..<count).filter { $0 % 7 != 3 }.count)
    }

    @Test func readingAheadGivesTheSameRowsInTheSameOrder() throws {
        let store = try open()
        // More than two chunks, with priorities and nested paths.
        var mutations: [StoreMutation] = []
        for i in 0..<(NamespaceStore.rowsPerChunk * 2 + 777) {
            mutations.append(leaf("items/k\(i)/n", .int(Int64(i)), priority: i % 5 == 0 ? .int(Int64(i)) : nil))
            if i % 100 == 0 { mutations.append(.putPriority(path: ["items", "k\(i)"], priority: .string("p\(i)"))) }
        }
        try commit(store, mutations)
        func dump(readingAhead: Bool) throws -> [String] {
            var dumped: [String] = []
            try store.loadAll(readingAhead: readingAhead) { entry in
                dumped.append(entry.path.joined(separator: "/") + "=" + text(entry.value) + "^" + text(entry.priority))
            }
            return dumped
        }
        let sequential = try dump(readingAhead: false)
        #expect(sequential.count == mutations.count)
        #expect(try dump(readingAhead: true) == sequential)
    }

    @Test func aLoadThatStopsStopsItsReaderAndRethrows() throws {
        struct Stop: Error {}
        let store = try open()
        try commit(store, (0..<(NamespaceStore.rowsPerChunk * 8)).map { leaf("k\($0)", .int(Int64($0))) })
        var seen = 0
        #expect(throws: Stop.self) {
            try store.loadAll(readingAhead: true) { _ in
                seen += 1
                if seen == NamespaceStore.rowsPerChunk + 1 { throw Stop() }
            }
        }
        #expect(seen == NamespaceStore.rowsPerChunk + 1)
        // The reader's read transaction ended with the call: a write and a whole load go on as usual.
        try commit(store, [leaf("after", .bool(true))])
        var count = 0
        try store.loadAll(readingAhead: true) { _ in count += 1 }
        #expect(count == NamespaceStore.rowsPerChunk * 8 + 1)
    }

    @Test func aDamagedRowStopsAReadAheadLoadAfterTheRowsBeforeIt() throws {
        let path = directory.file()
        let count = NamespaceStore.rowsPerChunk * 3
        do {
            let store = try NamespaceStore(path: path)
            try commit(store, (0..<count).map { leaf(String(format: "k%06d", $0), .int(Int64($0))) })
            store.flushAndClose()
        }
        let connection = try SQLiteConnection(path: path)
        try connection.execute("UPDATE nodes SET value = '{bad' WHERE key = 'k005000'")
        try connection.close()
        let store = try NamespaceStore(path: path)
        var seen = 0
        #expect {
            try store.loadAll(readingAhead: true) { _ in seen += 1 }
        } throws: { ($0 as? StoreError)?.kind == .corrupt }
        #expect(seen == 5000)
    }
}
