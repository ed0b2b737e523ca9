// PublishTestSupport -- loading the seed event from disk and small tree helpers shared by the publish tests.

import CanopyCore
import CanopyPublish
import Foundation
import Testing

/// The files under the repository's `seed/` folder.
enum Seed {
    /// `<repo>/seed`, found from this file's location.
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("seed")

    static func json(_ name: String) throws -> JSONValue {
        let data = try Data(contentsOf: folder.appendingPathComponent(name))
        return try JSONValue.parse(Array(data))
    }

    /// The demo event's tree: the `data` member of the versioned export document in `seed/`.
    static func event() throws -> Node { try Node.from(json: json("canopy-demo-summit.json")["data"] ?? .null) }

    static func directory() throws -> AttendeeDirectory {
        try AttendeeDirectory.parse(json("attendees.json"))
    }

    /// `expected-feeds.json`'s `feeds`: attendee id → keys in order.
    static func expectedFeeds() throws -> [String: [String]] {
        var feeds: [String: [String]] = [:]
        for member in try #require(json("expected-feeds.json")["feeds"]?.members) {
            feeds[member.key] = (member.value.arrayValue ?? []).compactMap(\.stringValue)
        }
        return feeds
    }

    /// `expected-feeds.json`'s `buckets`, as location path → keys (users and tiers spelled out per id).
    static func expectedBuckets() throws -> [String: [String]] {
        var buckets: [String: [String]] = [:]
        for member in try #require(json("expected-feeds.json")["buckets"]?.members) {
            if let keys = member.value.arrayValue {
                buckets[member.key] = keys.compactMap(\.stringValue)
            } else {
                for sub in member.value.members ?? [] {
                    buckets[member.key + "/" + sub.key + "/content"] = (sub.value.arrayValue ?? [])
                        .compactMap(\.stringValue)
                }
            }
        }
        return buckets
    }
}

extension Node {
    /// Applies writes in order, as the server's atomic multi-location update would.
    func applying(_ writes: [(path: Path, node: Node)]) -> Node {
        writes.reduce(self) { $0.setting($1.node, at: $1.path) }
    }

    /// A tree from a JSON literal (tests only: invalid data is a test bug).
    static func literal(_ json: JSONValue) -> Node {
        do { return try Node.from(json: json) } catch { preconditionFailure("bad test data: \(error)") }
    }
}

/// Sorted key lists per location of a fan-out, in the shape of `expected-feeds.json`'s buckets.
func bucketKeys(_ fan: FanOut) -> [String: [String]] {
    var out: [String: [String]] = [:]
    for (path, node) in fan.locations() { out[path.relativeDescription] = node.childKeys.sorted() }
    return out
}

/// `root` with the given writes applied at `/private/admin/pendingContent` and settings.
func event(pending: JSONValue, isolateGroups: Bool = false) -> Node {
    var root = Node.empty.setting(Node.literal(pending), at: PublishLayout.pendingContent)
    if isolateGroups {
        root = root.setting(Node(leaf: .bool(true)), at: PublishLayout.settings.child("isolateGroups"))
    }
    return root
}
