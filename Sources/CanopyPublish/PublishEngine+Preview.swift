// PublishEngine+Preview -- what a publish would change (dry run) and the feed one attendee sees (preview).
//
// Dry-run output shape:
//   {"ok": true, "locations": [{"path": "/public/admin/content", "added": [keys], "removed": [keys],
//                               "changed": [keys]}, …],
//    "unchangedLocations": n,
//    "attendees": [{"id", "gains": [keys], "loses": [keys], "changes": [keys]}, …]}   (with a directory)
// or, when pending content is invalid, {"ok": false, "error": {"code", "message", "key"?, "field"?}}.
// Only locations and attendees with a difference are listed.

import CanopyCore

extension PublishEngine {
    /// What publishing `pendingContent` would change, per derived location and, given a directory, per attendee.
    public static func dryRun(root: Node, directory: AttendeeDirectory?) -> JSONValue {
        let settings = PublishSettings(root: root)
        let fan: FanOut
        do {
            fan = try fanOut(pending: root.node(at: PublishLayout.pendingContent), settings: settings)
        } catch {
            var members = [
                JSONMember("code", .string(error.code)), JSONMember("message", .string(error.userMessage)),
            ]
            if let key = error.key { members.append(JSONMember("key", .string(key))) }
            if let field = error.field { members.append(JSONMember("field", .string(field))) }
            return .object([JSONMember("ok", .bool(false)), JSONMember("error", .object(members))])
        }
        let changes = changedLocations(root: root, fanOut: fan)
        let locations: [JSONValue] = changes.map { change in
            let diff = keyDiff(old: change.old, new: FanOut.node(change.new))
            return .object([
                JSONMember("path", .string(change.path.description)),
                JSONMember("added", strings(diff.added)),
                JSONMember("removed", strings(diff.removed)),
                JSONMember("changed", strings(diff.changed)),
            ])
        }
        var members = [
            JSONMember("ok", .bool(true)),
            JSONMember("locations", .array(locations)),
            JSONMember(
                "unchangedLocations",
                .int(Int64(fan.locationCount - changes.filter { !$0.new.isEmpty }.count))),
        ]
        if let directory {
            var attendees: [JSONValue] = []
            let publicBefore = FeedMerger.PublicItems(root.node(at: PublishLayout.publicContent))
            let publicAfter = FeedMerger.PublicItems(FanOut.node(fan.publicContent))
            for attendee in directory.attendees {
                let diff = FeedDiff(
                    old: publishedEntries(root: root, attendee: attendee, publicItems: publicBefore),
                    new: fanOutEntries(fan, attendee: attendee, publicItems: publicAfter))
                if diff.isEmpty { continue }
                attendees.append(
                    .object([
                        JSONMember("id", .string(attendee.id)),
                        JSONMember("gains", strings(diff.added)),
                        JSONMember("loses", strings(diff.removed)),
                        JSONMember("changes", strings(diff.changed)),
                    ]))
            }
            members.append(JSONMember("attendees", .array(attendees)))
        }
        return .object(members)
    }

    /// The merged, ordered feed `attendee` sees: from the derived locations as published, or (`pending`) as
    /// publishing `pendingContent` now would make it. Invalid pending items are left out of a pending preview;
    /// call `validate(root:)` first to report them.
    public static func feed(root: Node, attendee: Attendee, pending: Bool) -> [(
        key: String, item: Node
    )] {
        if pending {
            let settings = PublishSettings(root: root)
            let content = root.node(at: PublishLayout.pendingContent)
            let items = content.children.compactMap { try? ContentItem(key: $0.key, node: $0.node) }
            let fan = (try? fanOut(items: items, settings: settings)) ?? FanOut()
            let entries = fanOutEntries(
                fan, attendee: attendee, publicItems: FeedMerger.PublicItems(FanOut.node(fan.publicContent)))
            return entries.map { ($0.key, $0.item) }
        }
        let publicItems = FeedMerger.PublicItems(root.node(at: PublishLayout.publicContent))
        return publishedEntries(root: root, attendee: attendee, publicItems: publicItems).map { ($0.key, $0.item) }
    }

    /// The feed `attendee` gets from the derived locations stored in `root`.
    static func publishedEntries(root: Node, attendee: Attendee, publicItems: FeedMerger.PublicItems)
        -> [FeedMerger.Entry]
    {
        FeedMerger.entries(
            user: root.node(at: PublishLayout.userContent(attendee.id)),
            tier: root.node(at: PublishLayout.tierContent(attendee.tierId)),
            groups: attendee.groupIds.map { root.node(at: PublishLayout.groupContent($0)) },
            publicItems: publicItems, attendee: attendee)
    }

    /// The feed `attendee` gets from the locations of `fan` (whose public location is `publicItems`).
    static func fanOutEntries(_ fan: FanOut, attendee: Attendee, publicItems: FeedMerger.PublicItems)
        -> [FeedMerger.Entry]
    {
        FeedMerger.entries(
            user: FanOut.node(fan.users[attendee.id] ?? [:]),
            tier: FanOut.node(fan.tiers[attendee.tierId] ?? [:]),
            groups: attendee.groupIds.map { FanOut.node(fan.groups[$0] ?? [:]) },
            publicItems: publicItems, attendee: attendee)
    }

    /// Keys only in `new`, only in `old`, and in both with different items; each in key order.
    static func keyDiff(old: Node, new: Node) -> (added: [String], removed: [String], changed: [String]) {
        var added: [String] = []
        var changed: [String] = []
        for (key, item) in new.children {
            let previous = old.child(key)
            if previous.isEmpty {
                added.append(key)
            } else if FeedDiff.differ(previous, item) {
                changed.append(key)
            }
        }
        let removed = old.childKeys.filter { !new.hasChild($0) }
        return (added, removed, changed)
    }

    private static func strings(_ keys: [String]) -> JSONValue { .array(keys.map { .string($0) }) }
}
