// PublishMemoTests -- the incremental publish (PublishMemo) against the full computation, on random histories.
//
// Each case draws a random event and runs a random sequence of steps on it: items edited, added, removed or all
// replaced, the isolateGroups setting flipped, derived locations written or deleted by someone else, publishes
// whose commit fails (computed, never applied), per-item publish and unpublish, rollbacks, and items whose key
// collides with a CSV row's copy. At every step the writes computed with the namespace's cache (the memo of the
// last publish) must equal, write for write, those computed from scratch, and an error must be the same error.

import CanopyCore
import Testing

@testable import CanopyPublish

@Suite struct PublishMemoTests {
    enum Step: CaseIterable {
        case editOne, add, remove, replaceAll, flipIsolation, foreignWrite, failedCommit, publishOne,
            unpublishOne, rollback, collision, publishAgain, editRows, rewriteAll
    }

    /// One random item named `key`, as stored.
    static func item(_ key: String, _ generator: inout RandomEvent) -> Node {
        var models = generator.items()
        while models.isEmpty { models = generator.items() }
        var model = models[0]
        model.key = key
        return Node.literal(generator.json([model])).child(key)
    }

    static func compare(
        _ cached: Result<[(path: Path, node: Node)], PublishError>,
        _ full: Result<[(path: Path, node: Node)], PublishError>, _ context: String
    ) {
        switch (cached, full) {
        case (.success(let a), .success(let b)):
            #expect(a.map(\.path) == b.map(\.path), "\(context)")
            #expect(a.count == b.count && zip(a, b).allSatisfy { $0.node == $1.node }, "\(context)")
        case (.failure(let a), .failure(let b)):
            #expect(a == b, "\(context)")
        default:
            Issue.record("one computation failed and the other did not: \(context)")
        }
    }

    @Test func incrementalPublishesEqualTheFullComputation() throws {
        var incremental = 0
        for seed in UInt64(1)...120 {
            var generator = RandomEvent(seed: seed &* 104_729)
            var root = event(pending: generator.json(generator.items()), isolateGroups: seed % 3 == 0)
            let cache = ParsedItems()
            var now: Int64 = 1
            for step in 0..<40 {
                now += 1
                let pending = root.node(at: PublishLayout.pendingContent)
                let keys = pending.childKeys
                let kind = Step.allCases.randomElement(using: &generator.rng)!
                var apply = true
                func run(_ compute: (ParsedItems?) throws(PublishError) -> [(path: Path, node: Node)]) {
                    let cached = Result { () throws(PublishError) in try compute(cache) }
                    let full = Result { () throws(PublishError) in try compute(nil) }
                    Self.compare(cached, full, "seed \(seed) step \(step) \(kind)")
                    if apply, case .success(let writes) = cached { root = root.applying(writes) }
                }
                let publish = { (c: ParsedItems?) throws(PublishError) in
                    try PublishEngine.publishWrites(root: root, now: now, publisher: "p", cache: c)
                }
                switch kind {
                case .editOne:
                    if let key = keys.randomElement(using: &generator.rng) {
                        root = root.setting(
                            Self.item(key, &generator), at: PublishLayout.pendingContent.child(key))
                    }
                    run(publish)
                case .add:
                    let key = "-n\(seed)x\(step)"
                    root = root.setting(Self.item(key, &generator), at: PublishLayout.pendingContent.child(key))
                    run(publish)
                case .remove:
                    if let key = keys.randomElement(using: &generator.rng) {
                        root = root.setting(.empty, at: PublishLayout.pendingContent.child(key))
                    }
                    run(publish)
                case .replaceAll:
                    root = root.setting(
                        Node.literal(generator.json(generator.items())), at: PublishLayout.pendingContent)
                    run(publish)
                case .flipIsolation:
                    let flag = PublishLayout.settings.child("isolateGroups")
                    let on = PublishSettings(root: root).isolateGroups
                    root = root.setting(Node(leaf: .bool(!on)), at: flag)
                    run(publish)
                case .foreignWrite:
                    let id = generator.attendees.randomElement(using: &generator.rng)!.id
                    let path = PublishLayout.users.child(id)
                    switch Int.random(in: 0..<5, using: &generator.rng) {
                    case 0: root = root.setting(.empty, at: path)
                    case 1: root = root.setting(Node(leaf: .string("x")), at: path.child("name"))
                    case 2:
                        root = root.setting(
                            Self.item("-foreign", &generator), at: PublishLayout.userContent(id).child("-foreign"))
                    case 3:
                        if let key = root.node(at: PublishLayout.userContent(id)).childKeys.first {
                            root = root.setting(.empty, at: PublishLayout.userContent(id).child(key))
                        }
                    default:
                        let tier = RandomEvent.tiers.randomElement(using: &generator.rng)!
                        root = root.setting(.empty, at: PublishLayout.tierContent(tier))
                        root = root.setting(.empty, at: PublishLayout.publicContent.child(keys.first ?? "-x"))
                    }
                    run(publish)
                case .failedCommit:
                    if let key = keys.randomElement(using: &generator.rng) {
                        root = root.setting(
                            Self.item(key, &generator), at: PublishLayout.pendingContent.child(key))
                    }
                    apply = false
                    run(publish)
                case .publishOne:
                    if let key = keys.randomElement(using: &generator.rng) {
                        root = root.setting(
                            Self.item(key, &generator), at: PublishLayout.pendingContent.child(key))
                        run { (c: ParsedItems?) throws(PublishError) in
                            try PublishEngine.publishItemWrites(
                                root: root, key: key, now: now, publisher: "p", cache: c)
                        }
                    }
                case .unpublishOne:
                    if let key = root.node(at: PublishLayout.content).childKeys.randomElement(using: &generator.rng) {
                        run { (c: ParsedItems?) throws(PublishError) in
                            try PublishEngine.unpublishItemWrites(
                                root: root, key: key, now: now, publisher: "p", cache: c)
                        }
                    }
                case .rollback:
                    if let id = root.node(at: PublishLayout.history).childKeys.randomElement(using: &generator.rng) {
                        run { (c: ParsedItems?) throws(PublishError) in
                            try PublishEngine.rollbackWrites(
                                root: root, historyID: id, now: now, publisher: "p", cache: c)
                        }
                    }
                case .collision:
                    // An item named like a CSV item's first row copy ("<key>0"), when there is a CSV item.
                    let csv = keys.first { pending.child($0).child("rawData").hasChildren }
                    let key = (csv ?? "-none") + "0"
                    root = root.setting(Self.item(key, &generator), at: PublishLayout.pendingContent.child(key))
                    run(publish)
                case .publishAgain:
                    run(publish)
                case .editRows:
                    // Some rows of a CSV item edited, removed or added; the other rows stay the same instances.
                    // Now and then its order changes too, which changes every row's copy.
                    if let csv = keys.first(where: { pending.child($0).child("rawData").hasChildren }) {
                        let rows = PublishLayout.pendingContent.child(csv).child("rawData")
                        let rowKeys = root.node(at: rows).childKeys
                        if let edited = rowKeys.randomElement(using: &generator.rng) {
                            let ids = generator.attendees.map(\.id)
                            let row = Node.literal([
                                "attendeeIds": [.string(ids.randomElement(using: &generator.rng)!)],
                                "text": .string("edited \(step)"),
                            ])
                            root = root.setting(row, at: rows.child(edited))
                        }
                        if rowKeys.count > 1, let removed = rowKeys.randomElement(using: &generator.rng) {
                            root = root.setting(.empty, at: rows.child(removed))
                        }
                        if Bool.random(using: &generator.rng) {
                            root = root.setting(
                                Node.literal(["attendeeIds": [.string(generator.attendees[0].id)], "text": "added"]),
                                at: rows.child(String(rowKeys.count + step)))
                        }
                        if Int.random(in: 0..<4, using: &generator.rng) == 0 {
                            let order = PublishLayout.pendingContent.child(csv).child("order")
                            root = root.setting(Node(leaf: .int(Int64(step))), at: order)
                        }
                    }
                    run(publish)
                case .rewriteAll:
                    // The whole of pendingContent written again as the server takes it: built anew, reusing the
                    // stored instances where nothing changed (`Node.from(json:at:reusing:)`), one item changed.
                    var json = pending.json()
                    if case .object(var members) = json, !members.isEmpty {
                        let index = Int.random(in: 0..<members.count, using: &generator.rng)
                        members[index].value = Self.item(members[index].key, &generator).json()
                        json = .object(members)
                    }
                    let written = try Node.from(json: json, at: PublishLayout.pendingContent, reusing: pending)
                    root = root.setting(written, at: PublishLayout.pendingContent)
                    run(publish)
                }
            }
            incremental += cache.incrementalPublishes
        }
        // The cached path must really have been the incremental one most of the time, or this test compares
        // the full computation with itself.
        #expect(incremental > 120 * 40 / 3, "incremental publishes: \(incremental)")
    }

    /// `PublishEngine.inKeyOrder` gives the keys in Firebase key order whether they are in the tree, new to it or
    /// gone from it: integer-like keys first by value, then strings by code unit.
    @Test func keysToCompareComeInKeyOrder() {
        var random = SplitMix64(seed: 11)
        for round in 0..<40 {
            let pool = (0..<300).map { i -> String in
                switch i % 4 {
                case 0: String(i * 7 % 1000)
                case 1: "-\(i)"
                case 2: "u\(i * 13 % 997)"
                default: "k\(i)\u{E9}"
                }
            }
            var tree: [String] = []
            var keys = Set<JSONKey>()
            for key in pool {
                let inTree = random.next(below: 4) != 0
                if inTree { tree.append(key) }
                // Most of the tree's ids, and some that are not in it.
                if random.next(below: 5) != 0 || !inTree { if round % 3 != 0 || inTree { keys.insert(JSONKey(key)) } }
            }
            tree.sort { compareKeys($0, $1) < 0 }
            let walked = tree.map { PublishMemo.Walked(key: $0, node: Node(leaf: .string($0)), vouched: false) }
            let expected = keys.sorted { compareKeys($0.string, $1.string) < 0 }.map(\.string)
            let ordered = PublishEngine.inKeyOrder(keys, treeOrder: walked)
            #expect(ordered.map(\.key.string) == expected, "round \(round)")
            // A node given is the tree's own for that key; keys the tree lacks have none.
            let inTree = Set(tree)
            for (key, stored) in ordered {
                if let stored { #expect(stored.value == .string(key.string)) }
                if !inTree.contains(key.string) { #expect(stored == nil) }
            }
        }
    }
}
