// PublishBenchEvent -- the deterministic synthetic event `canopy bench publish` publishes (two revisions).

import CanopyCore

/// The seeded generator: the same seed always gives the same event.
typealias BenchRandom = SplitMix64

/// The sizes of the generated event.
struct PublishBenchShape {
    var items = 1000
    var attendees = 10000
    var tiers = 50
    var groups = 20
}

/// A generated event: attendees with their tiers, and `pendingContent` for a given revision.
///
/// Revision 0 is the base; revision 1 edits about 10% of the items' text, re-targets about 5% of them and
/// rewrites every third CSV row, the kind of change an organiser republishes.
struct PublishBenchEvent {
    let shape: PublishBenchShape
    let seed: UInt64

    static let csvKey = "itemcsv"
    private static let types = ["text", "web", "html", "video"]

    func attendeeID(_ index: Int) -> String { "att" + String(index).leftPadded(5) }
    func tierID(_ index: Int) -> String { "tier" + String(index).leftPadded(2) }
    func groupID(_ index: Int) -> String { "grp" + String(index).leftPadded(2) }

    /// The tier of attendee `index` (stable across revisions).
    func tier(ofAttendee index: Int) -> String {
        var rng = BenchRandom(seed: seed ^ 0xA77E_0000 ^ UInt64(index))
        return tierID(Int.random(in: 0..<shape.tiers, using: &rng))
    }

    /// `pendingContent` of `revision`: `items - 1` regular items and one `textCSV` item with a row per attendee.
    func pendingContent(revision: Int) -> JSONValue {
        var members: [JSONMember] = []
        members.reserveCapacity(shape.items)
        for index in 0..<max(0, shape.items - 1) {
            members.append(JSONMember("item" + String(index).leftPadded(4), item(index, revision: revision)))
        }
        members.append(JSONMember(Self.csvKey, csvItem(revision: revision)))
        return .object(members)
    }

    private func item(_ index: Int, revision: Int) -> JSONValue {
        var rng = BenchRandom(seed: seed &* 31 &+ UInt64(index))
        var edit = BenchRandom(seed: seed ^ 0x5EED_0000_0000 ^ UInt64(index))
        let editsText = revision > 0 && Int.random(in: 0..<100, using: &edit) < 10
        let retargets = revision > 0 && Int.random(in: 0..<100, using: &edit) < 5
        let type = Self.types[Int.random(in: 0..<Self.types.count, using: &rng)]
        var members: [JSONMember] = [
            JSONMember("order", .int(Int64(index))),
            JSONMember("type", .string(type)),
            JSONMember("title", .string("Session \(index)")),
            JSONMember("text", .string(editsText ? "Updated: \(words(&edit))" : words(&rng))),
        ]
        if type == "web" { members.append(JSONMember("url", .string("https://example.org/s/\(index)"))) }
        if retargets {
            _ = visibility(&rng)
            members += visibility(&edit)
        } else {
            members += visibility(&rng)
        }
        return .object(members)
    }

    /// Random visibility: 10% global, 20% groups, 40% tiers, 30% named attendees.
    private func visibility(_ rng: inout BenchRandom) -> [JSONMember] {
        func ids(_ count: ClosedRange<Int>, _ limit: Int, _ name: (Int) -> String) -> JSONValue {
            let n = Int.random(in: count, using: &rng)
            var picked = Set<Int>()
            while picked.count < min(n, limit) { picked.insert(Int.random(in: 0..<limit, using: &rng)) }
            return .array(picked.sorted().map { .string(name($0)) })
        }
        switch Int.random(in: 0..<100, using: &rng) {
        case ..<10: return []
        case ..<30: return [JSONMember("groupIds", ids(1...3, shape.groups, groupID))]
        case ..<70: return [JSONMember("tierIds", ids(1...3, shape.tiers, tierID))]
        default: return [JSONMember("attendeeIds", ids(1...30, shape.attendees, attendeeID))]
        }
    }

    private func csvItem(revision: Int) -> JSONValue {
        var rows: [JSONValue] = []
        rows.reserveCapacity(shape.attendees)
        for index in 0..<shape.attendees {
            let changed = revision > 0 && index % 3 == 0
            rows.append([
                "attendeeIds": [.string(attendeeID(index))],
                "title": "Your seat",
                "text": .string("Row \(index / 40 + (changed ? 7 : 0)), seat \(index % 40)"),
            ])
        }
        return [
            "order": .int(Int64(shape.items)), "type": "textCSV", "title": "Seating",
            "rawData": .array(rows),
        ]
    }

    private func words(_ rng: inout BenchRandom) -> String {
        let vocabulary = ["keynote", "panel", "coffee", "hall", "workshop", "lunch", "demo", "room", "speaker", "notes"]
        return (0..<8).map { _ in vocabulary[Int.random(in: 0..<vocabulary.count, using: &rng)] }
            .joined(separator: " ")
    }
}
