// PublishFuzzTests -- arbitrary pendingContent either publishes or fails with a PublishError; never traps.

import CanopyCore
import CanopyPublish
import Testing

/// Random JSON in the neighbourhood of real items: the field names the engine reads, with values of any type.
struct JunkGenerator {
    var rng: SeededRandom
    static let fields = ["order", "type", "tierIds", "groupIds", "attendeeIds", "checkAll", "rawData", "title"]

    mutating func value(depth: Int) -> JSONValue {
        switch Int.random(in: 0..<(depth > 2 ? 6 : 9), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int64.random(in: -3...3, using: &rng))
        case 3: return .double(Double.random(in: -2...2, using: &rng))
        case 4: return .string(["textCSV", "default", "", "a/b", "11", "CSV", "x"].randomElement(using: &rng)!)
        case 5: return .string(String(Int.random(in: 0...20, using: &rng)))
        case 6, 7: return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in value(depth: depth + 1) })
        default: return object(depth: depth + 1)
        }
    }

    mutating func object(depth: Int) -> JSONValue {
        let names = Self.fields.shuffled(using: &rng).prefix(Int.random(in: 0...5, using: &rng))
        return .object(names.map { JSONMember($0, value(depth: depth)) })
    }
}

@Suite struct PublishFuzzTests {
    @Test func arbitraryDraftsNeverTrap() throws {
        var published = 0
        for seed in UInt64(1)...400 {
            var junk = JunkGenerator(rng: SeededRandom(seed: seed))
            let items = (0..<Int.random(in: 1...4, using: &junk.rng)).map { i in
                JSONMember("k\(i)", junk.object(depth: 0))
            }
            let root = event(pending: .object(items), isolateGroups: seed % 2 == 0)
            _ = PublishEngine.status(root: root)
            _ = PublishEngine.dryRun(root: root, directory: AttendeeDirectory(attendees: [Attendee(id: "11")]))
            _ = PublishEngine.feed(root: root, attendee: Attendee(id: "11", groupIds: ["11"]), pending: true)
            do {
                let after = root.applying(try PublishEngine.publishWrites(root: root, now: 1, publisher: nil))
                published += 1
                #expect(PublishEngine.status(root: after)["upToDate"] == .bool(true))
            } catch {
                #expect(error.code == "invalid_item")
            }
        }
        #expect(published > 20)  // the generator reaches the success path as well as the failures
    }
}
