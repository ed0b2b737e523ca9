// PublishPropertyTests -- random events: every merged feed equals a direct evaluation of the visibility rule.
//
// Each case draws a random directory and two random versions of pendingContent from a seeded generator, publishes
// the first, then the second on top (so stale copies must be deleted), and checks every attendee's merged feed
// against the definition evaluated on the generator's own model, not on the engine's parsed items. Lists are
// written in every accepted shape (missing, null, [], {}, numbers, strings, `{"id": true}` maps).

import CanopyCore
import CanopyPublish
import Testing

/// The shared deterministic generator (CanopyCore).
typealias SeededRandom = SplitMix64

/// One generated item, as the test understands it.
struct ModelItem {
    var key: String
    var order: Int64
    var csv: Bool
    var tiers: [String]
    var groups: [String]
    var attendees: [String]
    var checkAll: Bool
    /// For CSV items: the attendee each row names.
    var rows: [String]

    /// The visibility definition of issue 5, written out independently of the engine.
    func visibleKeys(to a: Attendee) -> [String] {
        if csv { return rows.indices.filter { rows[$0] == a.id }.map { key + String($0) } }
        let global = checkAll || (tiers.isEmpty && groups.isEmpty && attendees.isEmpty)
        let sees =
            global || tiers.contains(a.tierId) || attendees.contains(a.id)
            || groups.contains(where: a.groupIds.contains)
        return sees ? [key] : []
    }
}

struct RandomEvent {
    static let tiers = ["default", "1", "2", "3"]
    static let groups = ["10", "11", "12", "13"]

    var attendees: [Attendee] = []
    var rng: SeededRandom

    init(seed: UInt64) {
        rng = SeededRandom(seed: seed)
        for i in 0..<12 {
            let tier = Self.tiers.randomElement(using: &rng)!
            let groups = Self.groups.filter { _ in Int.random(in: 0..<3, using: &rng) == 0 }
            attendees.append(Attendee(id: String(2000 + i), tierId: tier, groupIds: groups))
        }
    }

    mutating func subset(_ pool: [String]) -> [String] {
        let n = [0, 0, 1, 1, 2].randomElement(using: &rng)!
        return Array(pool.shuffled(using: &rng).prefix(n))
    }

    mutating func items() -> [ModelItem] {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        var keys = Set<String>()
        while keys.count < Int.random(in: 0...10, using: &rng) {
            keys.insert("-" + String((0..<5).map { _ in letters.randomElement(using: &rng)! }))
        }
        let ids = attendees.map(\.id) + ["9999"]
        return keys.sorted().map { key in
            let csv = Int.random(in: 0..<6, using: &rng) == 0
            return ModelItem(
                key: key, order: Int64.random(in: 0...4, using: &rng), csv: csv,
                tiers: csv ? [] : subset(Self.tiers), groups: csv ? [] : subset(Self.groups),
                attendees: csv ? [] : subset(ids), checkAll: Int.random(in: 0..<8, using: &rng) == 0,
                rows: csv ? (0..<Int.random(in: 0...4, using: &rng)).map { _ in ids.randomElement(using: &rng)! } : [])
        }
    }

    /// One id as stored: numeric ids sometimes as numbers.
    mutating func stored(_ id: String) -> JSONValue {
        if let n = Int64(id), Bool.random(using: &rng) { return .int(n) }
        return .string(id)
    }

    /// A list in a random accepted shape.
    mutating func list(_ ids: [String]) -> JSONValue? {
        if ids.isEmpty { return [nil, .null, .array([]), .object([])].randomElement(using: &rng)! }
        if Int.random(in: 0..<5, using: &rng) == 0 { return .object(ids.map { JSONMember($0, true) }) }
        return .array(ids.map { stored($0) })
    }

    /// An event whose random items were published, then replaced in `pendingContent` by other random items (so a
    /// publish must delete stale copies): the tree and the pending items.
    mutating func publishedThenEdited(isolateGroups: Bool) throws -> (root: Node, pending: [ModelItem]) {
        let before = items()
        let after = items()
        var root = event(pending: json(before), isolateGroups: isolateGroups)
        root = root.applying(try PublishEngine.publishWrites(root: root, now: 1, publisher: nil))
        return (root.setting(Node.literal(json(after)), at: PublishLayout.pendingContent), after)
    }

    mutating func json(_ items: [ModelItem]) -> JSONValue {
        var members: [JSONMember] = []
        for item in items {
            var fields = [
                JSONMember("order", .int(item.order)), JSONMember("type", .string(item.csv ? "textCSV" : "text")),
                JSONMember("title", .string("t\(item.key)")),
            ]
            if item.checkAll || Bool.random(using: &rng) { fields.append(JSONMember("checkAll", .bool(item.checkAll))) }
            for (name, ids) in [("tierIds", item.tiers), ("groupIds", item.groups), ("attendeeIds", item.attendees)] {
                if let value = list(ids) { fields.append(JSONMember(name, value)) }
            }
            if item.csv {
                let rows: [JSONValue] = item.rows.map { id in
                    .object([JSONMember("text", "row"), JSONMember("attendeeIds", .array([stored(id)]))])
                }
                fields.append(JSONMember("rawData", .array(rows)))
            }
            members.append(JSONMember(item.key, .object(fields)))
        }
        return .object(members)
    }
}

@Suite struct PublishPropertyTests {
    @Test(arguments: [false, true])
    func mergedFeedsEqualTheVisibilityDefinition(isolateGroups: Bool) throws {
        for seed in UInt64(1)...150 {
            var generator = RandomEvent(seed: seed &* 7919 &+ (isolateGroups ? 1 : 0))
            let (edited, after) = try generator.publishedThenEdited(isolateGroups: isolateGroups)
            let root = edited.applying(try PublishEngine.publishWrites(root: edited, now: 2, publisher: nil))

            for attendee in generator.attendees {
                let feed = FeedMerger.merge(
                    user: root.node(at: PublishLayout.userContent(attendee.id)),
                    tier: root.node(at: PublishLayout.tierContent(attendee.tierId)),
                    publicContent: root.node(at: PublishLayout.publicContent),
                    groups: isolateGroups
                        ? attendee.groupIds.map { root.node(at: PublishLayout.groupContent($0)) } : [],
                    attendee: attendee)
                let expected = after.flatMap { item in item.visibleKeys(to: attendee).map { (item.order, $0) } }
                    .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : compareKeys($0.1, $1.1) < 0 }.map(\.1)
                #expect(feed.map(\.key) == expected, "seed \(seed), attendee \(attendee.id)")
            }
            if isolateGroups {
                let leaked = after.filter { item in
                    !item.groups.isEmpty && !item.checkAll
                        && root.node(at: PublishLayout.publicContent).hasChild(item.key)
                }
                #expect(leaked.isEmpty, "seed \(seed): group items in public")
            } else {
                #expect(root.node(at: PublishLayout.groups).isEmpty)
            }
        }
    }
}

/// Random events and random writes beside them: whenever `readsSameInputs` says a write left the engine's inputs as
/// they were, publishing from the tree before it gives exactly the writes of publishing from the tree after it
/// (what lets the server commit a publish that such writes overtook, `Namespace.rebase`).
@Suite struct PublishInputsPropertyTests {
    /// A random write somewhere in an event: mostly where the engine reads nothing, sometimes where it does.
    static func randomWrite(_ generator: inout RandomEvent) -> (path: Path, node: Node) {
        let ids = generator.attendees.map(\.id) + ["9999"]
        let id = ids.randomElement(using: &generator.rng)!
        let tier = RandomEvent.tiers.randomElement(using: &generator.rng)!
        let value: JSONValue = [.int(7), .string("x"), .null, ["a": 1, "b": ["c": true]]].randomElement(using: &generator.rng)!
        let segments: [[String]] = [
            ["chat", "m\(Int.random(in: 0..<3, using: &generator.rng))"],
            ["private", "adminable", "users", id, "profile"],
            ["private", "adminable", "tiers", tier, "name"],
            ["private", "adminable", "groups", "10", "members"],
            ["private", "adminable", "users", id],
            ["private", "adminable", "users", id, "content", "a"],
            ["private", "admin", "settings", "theme"],
            ["public", "admin", "other"],
            ["public", "admin", "content", "z"],
        ]
        let path = Path(segments: segments.randomElement(using: &generator.rng)!)
        return (path, Node.literal(value))
    }

    @Test(arguments: [false, true])
    func writesThatLeaveTheInputsLeaveThePublish(isolateGroups: Bool) throws {
        var same = 0
        var changed = 0
        for seed in UInt64(1)...200 {
            var generator = RandomEvent(seed: seed &* 104_729 &+ (isolateGroups ? 1 : 0))
            let root = try generator.publishedThenEdited(isolateGroups: isolateGroups).root
            var overtaken = root
            for _ in 0..<Int.random(in: 1...3, using: &generator.rng) {
                let write = Self.randomWrite(&generator)
                overtaken = overtaken.setting(write.node, at: write.path)
            }
            guard PublishEngine.readsSameInputs(root, overtaken) else {
                changed += 1
                continue
            }
            same += 1
            let computed = try PublishEngine.publishWrites(root: root, now: 2, publisher: "p")
            let again = try PublishEngine.publishWrites(root: overtaken, now: 2, publisher: "p")
            #expect(computed.map(\.path) == again.map(\.path), "seed \(seed)")
            #expect(computed.map { $0.node.json() } == again.map { $0.node.json() }, "seed \(seed)")
        }
        // Both kinds were drawn often enough for the property to mean something.
        #expect(same >= 50 && changed >= 20, "same \(same), changed \(changed)")
    }
}
