// PublishStatusTests -- status (pending vs published) and the dry run (per location and per attendee).

import CanopyCore
import CanopyPublish
import Testing

@Suite struct PublishStatusTests {
    func states(_ status: JSONValue) -> [String: String] {
        var out: [String: String] = [:]
        for item in status["items"]?.arrayValue ?? [] {
            if let key = item["key"]?.stringValue { out[key] = item["state"]?.stringValue }
        }
        return out
    }

    @Test func statusNamesEveryItemsState() throws {
        var root = event(pending: [
            "same": ["order": 0, "title": "s"], "changed": ["order": 1], "gone": ["order": 2],
        ])
        root = root.applying(try PublishEngine.publishWrites(root: root, now: 77, publisher: nil))
        root = root.setting(
            Node.literal(["same": ["order": 0, "title": "s"], "changed": ["order": 1.5], "new": ["order": "x"]]),
            at: PublishLayout.pendingContent)
        let status = PublishEngine.status(root: root)
        #expect(states(status) == ["same": "same", "changed": "changed", "gone": "removed", "new": "added"])
        #expect(status["lastPublishedAt"] == .int(77))
        #expect(status["upToDate"] == .bool(false))
        #expect(status["counts"]?["invalid"] == .int(1))
        #expect(
            status["items"]?.arrayValue?.map { $0["key"]?.stringValue ?? "" } == ["same", "changed", "gone", "new"])
        let invalid = status["items"]?.arrayValue?.last
        #expect(invalid?["error"]?.stringValue?.contains("'new'") == true)
    }

    @Test func statusOfAPublishedEventIsUpToDate() throws {
        let root = try Seed.event()
        let published = root.applying(try PublishEngine.publishWrites(root: root, now: 1, publisher: nil))
        #expect(PublishEngine.status(root: published)["upToDate"] == .bool(true))
        #expect(PublishEngine.status(root: root)["counts"]?["added"] == .int(9))
    }

    @Test func dryRunOfTheDemoListsLocationsAndAttendees() throws {
        let root = try Seed.event()
        let result = PublishEngine.dryRun(root: root, directory: try Seed.directory())
        #expect(result["ok"] == .bool(true))
        let paths = result["locations"]?.arrayValue?.compactMap { $0["path"]?.stringValue } ?? []
        #expect(paths.contains("/public/admin/content"))
        #expect(paths.contains("/private/adminable/users/100202/content"))
        #expect(paths.count == 1 + 4 + 7)
        let attendees = result["attendees"]?.arrayValue ?? []
        #expect(attendees.count == 12)
        let bram = attendees.first { $0["id"] == .string("100202") }
        let expected = try Seed.expectedFeeds()["100202"]!.sorted { compareKeys($0, $1) < 0 }
        #expect(bram?["gains"]?.arrayValue?.compactMap(\.stringValue) == expected)
        #expect(bram?["loses"]?.arrayValue?.isEmpty == true)
    }

    @Test func dryRunAfterAnEditShowsOnlyWhatChanges() throws {
        var root = try Seed.event()
        root = root.applying(try PublishEngine.publishWrites(root: root, now: 1, publisher: nil))
        // Remove the tier-101 item: only that tier and its three attendees change.
        root = root.setting(.empty, at: PublishLayout.pendingContent.child("-OKzIpCw8u33iOJJfsuf"))
        let result = PublishEngine.dryRun(root: root, directory: try Seed.directory())
        let locations = result["locations"]?.arrayValue ?? []
        #expect(locations.count == 1)
        #expect(locations.first?["path"] == .string("/private/adminable/tiers/101/content"))
        #expect(locations.first?["removed"] == .array(["-OKzIpCw8u33iOJJfsuf"]))
        let ids = result["attendees"]?.arrayValue?.compactMap { $0["id"]?.stringValue }
        #expect(ids == ["100201", "100204", "100210"])
    }

    @Test func dryRunReportsAnInvalidItem() throws {
        let root = event(pending: ["bad": ["order": "soon"]])
        let result = PublishEngine.dryRun(root: root, directory: nil)
        #expect(result["ok"] == .bool(false))
        #expect(result["error"]?["key"] == .string("bad"))
        #expect(result["error"]?["field"] == .string("order"))
        #expect(throws: PublishError(.nonNumericOrder, key: "bad", field: "order")) {
            try PublishEngine.validate(root: root)
        }
    }

    @Test func dryRunSeesReorderedAndChangedItemsPerAttendee() throws {
        var root = try Seed.event()
        root = root.applying(try PublishEngine.publishWrites(root: root, now: 1, publisher: nil))
        let welcome = PublishLayout.pendingContent.child("-OKzKOoLaQT_8iMGWeID")
        root = root.setting(Node(leaf: .int(99)), at: welcome.child("order"))
        root = root.setting(
            Node(leaf: .string("Pilot v2")),
            at: PublishLayout.pendingContent.appending(
                Path(segments: ["-OKzNX8oaPmZevDxYO1D", "title"])))
        let result = PublishEngine.dryRun(root: root, directory: try Seed.directory())
        let attendees = result["attendees"]?.arrayValue ?? []
        #expect(attendees.count == 12)
        for entry in attendees {
            let changes = entry["changes"]?.arrayValue?.compactMap(\.stringValue) ?? []
            let pilot = ["100203", "100207", "100212"].contains(entry["id"]?.stringValue ?? "")
            #expect(changes == (pilot ? ["-OKzKOoLaQT_8iMGWeID", "-OKzNX8oaPmZevDxYO1D"] : ["-OKzKOoLaQT_8iMGWeID"]))
            #expect(entry["gains"]?.arrayValue?.isEmpty == true && entry["loses"]?.arrayValue?.isEmpty == true)
        }
    }
}
