// PublishLayout -- where the publish engine reads and writes inside one event's namespace.
//
//   private/admin/pendingContent/<key>               drafts, edited by admins
//   private/admin/content/<key>                      the published master
//   private/admin/lastPublishedAt                    server time (ms) of the last publish
//   private/admin/settings/isolateGroups             true → group items go to private groups locations
//   private/admin/publishHistory/<id>                {publishedAt, publisher, itemCount, contentHash,
//                                                     items: {<key>: <version>}}
//   private/admin/publishedVersions/<version>        each item body a history entry names, keyed by its hash
//   private/admin/directory                          the attendee directory the console uploaded (DirectoryDocument)
//   public/admin/content/<key>                       global and (not isolated) group items, lists kept
//   private/adminable/users/<userId>/content/<key>   per-attendee copies, lists removed
//   private/adminable/tiers/<tierId>/content/<key>   per-tier copies, lists removed
//   private/adminable/groups/<groupId>/content/<key> per-group copies when isolated, lists removed

import CanopyCore

/// The fixed locations of the personalized-content data model, relative to the event (namespace) root.
public enum PublishLayout {
    /// `private/admin`: the organiser's side of the event (drafts, published content, settings, history).
    public static let admin = Path(segments: ["private", "admin"])
    /// `private/admin/pendingContent`.
    public static let pendingContent = Path(segments: ["private", "admin", "pendingContent"])
    /// `private/admin/content`.
    public static let content = Path(segments: ["private", "admin", "content"])
    /// `private/admin/lastPublishedAt`.
    public static let lastPublishedAt = Path(segments: ["private", "admin", "lastPublishedAt"])
    /// `private/admin/settings`.
    public static let settings = Path(segments: ["private", "admin", "settings"])
    /// `private/admin/publishHistory`.
    public static let history = Path(segments: ["private", "admin", "publishHistory"])
    /// `private/admin/publishedVersions`: item bodies by version key (see `PublishHistory`).
    public static let versions = Path(segments: ["private", "admin", "publishedVersions"])
    /// `private/admin/directory`.
    public static let directory = Path(segments: ["private", "admin", "directory"])
    /// `public/admin/content`.
    public static let publicContent = Path(segments: ["public", "admin", "content"])
    /// `private/adminable/users`.
    public static let users = Path(segments: ["private", "adminable", "users"])
    /// `private/adminable/tiers`.
    public static let tiers = Path(segments: ["private", "adminable", "tiers"])
    /// `private/adminable/groups`.
    public static let groups = Path(segments: ["private", "adminable", "groups"])

    /// The name of the child replaced under each user, tier and group node.
    public static let contentKey = "content"

    /// `private/adminable/users/<id>/content`.
    public static func userContent(_ id: String) -> Path { users.child(id).child(contentKey) }
    /// `private/adminable/tiers/<id>/content`.
    public static func tierContent(_ id: String) -> Path { tiers.child(id).child(contentKey) }
    /// `private/adminable/groups/<id>/content`.
    public static func groupContent(_ id: String) -> Path { groups.child(id).child(contentKey) }
}

/// Per-event publish options, stored under `private/admin/settings`.
public struct PublishSettings: Sendable, Hashable {
    /// Group-targeted items go to `private/adminable/groups/<groupId>/content` instead of the public location.
    public var isolateGroups: Bool

    /// Creates settings.
    public init(isolateGroups: Bool = false) {
        self.isolateGroups = isolateGroups
    }

    /// The settings stored in the event `root`: `isolateGroups` is on only when it is the boolean `true`.
    public init(root: Node) {
        let flag = root.node(at: PublishLayout.settings.child("isolateGroups")).value
        if case .bool(true)? = flag {
            isolateGroups = true
        } else {
            isolateGroups = false
        }
    }
}
