// PersonalizedContentFeed -- an attendee's merged content feed, live and offline-first, on top of the SDK.
//
// Locations (issue 5's data model): `private/adminable/users/<userId>/content`,
// `private/adminable/tiers/<tierId>/content`, `public/admin/content`, and
// `private/adminable/groups/<groupId>/content` for each group. Attendees cannot read the event's settings, so
// the group locations are always listened to: they are simply empty unless the event isolates groups.
//
// All locations share ONE snapshot stream (every observer gets the same continuation), so their events arrive
// in the order the client's sync queue produced them. Coalescing: after the first event of a burst the consumer
// enqueues a barrier on that same serial queue; the barrier comes back through the stream after every server
// push that was already queued (the frames of one socket read are queued as one job), so a commit
// that changed several locations is merged and yielded once, when the burst is over (`FeedBurst`). This adds a
// queue hop or two, not a timer, so no visible latency.

import CanopyCore
import CanopyPublish

/// The feed of one attendee: their user, tier, group and public content merged, deduplicated by key, filtered
/// by their tier, groups and id, and ordered by `order` then key (the same merge as the server's preview).
///
/// ```swift
/// let feed = try PersonalizedContentFeed(db: db, userId: "100203", tierId: "102", groups: ["12"])
/// for try await items in feed.values { render(items) }   // cached feed first when offline, then every change
/// ```
public final class PersonalizedContentFeed: Sendable {
    /// The database the feed listens through (kept open while the feed exists).
    public let db: Database
    /// Whose feed it is.
    public let attendee: Attendee
    /// The listened locations: user, tier, public, then one per group.
    let locations: [Path]

    /// Prepares the feed of one attendee (nothing is listened to until `values` is iterated).
    /// - Parameters:
    ///   - db: the event's database, opened with the attendee's token.
    ///   - userId: the attendee id (token claim `userId`).
    ///   - tierId: the tier id (token claim `tierId`); empty means `"default"`.
    ///   - groups: the attendee's group ids (the keys of the token claim `groups`); duplicates are ignored.
    /// - Throws: `ClientError.invalidData` when an id cannot be a database key.
    public convenience init(db: Database, userId: String, tierId: String, groups: [String]) throws(ClientError) {
        var unique: [String] = []
        for group in groups where !unique.contains(group) { unique.append(group) }
        try self.init(db: db, attendee: Attendee(id: userId, tierId: tierId, groupIds: unique))
    }

    /// Prepares the feed of `attendee` (see `Attendee(claims:)` to read one from token claims).
    /// - Throws: `ClientError.invalidData` when an id cannot be a database key.
    public init(db: Database, attendee: Attendee) throws(ClientError) {
        for id in [attendee.id, attendee.tierId] + attendee.groupIds where !Key.isValid(id) {
            throw .invalidData(path: "/", reason: "an attendee, tier or group id is not a valid key")
        }
        self.db = db
        self.attendee = attendee
        locations = Self.locations(of: attendee)
    }

    /// The locations the feed of `attendee` is made of: user, tier, public, then one per group.
    public static func locations(of attendee: Attendee) -> [Path] {
        let adminable = ["private", "adminable"]
        return [
            Path(segments: adminable + ["users", attendee.id, "content"]),
            Path(segments: adminable + ["tiers", attendee.tierId, "content"]),
            Path(segments: ["public", "admin", "content"]),
        ] + attendee.groupIds.map { Path(segments: adminable + ["groups", $0, "content"]) }
    }

    /// The marker location of a burst barrier (never a real listen: `.info` paths are local).
    static let barrierPath = Path(segments: [SyncCore.infoKey, "feedBarrier"])

    /// The feed: the current one as soon as every location has a value (from the cache when offline), then one
    /// per change; a burst of events (one publish) gives one update, and an update is yielded only when the
    /// feed differs from the previous one.
    ///
    /// The stream throws `ClientError.permissionDenied` when the server refuses a location (a token for another
    /// attendee or event), and ends when the database closes. Stop iterating to stop listening.
    public var values: AsyncThrowingStream<[FeedItem], any Error> {
        let core = db.core
        let locations = locations
        let (events, sink) = AsyncThrowingStream<DataSnapshot, any Error>.makeStream()
        let ids = core.sync { locations.map { core.addObserver(path: $0, spec: .default, continuation: sink) } }
        sink.onTermination = { _ in
            core.queue.async { for id in ids { core.removeObserver(id) } }
        }
        let barrier = DataSnapshot(path: Self.barrierPath, node: .empty, spec: .default, fromCache: false)
        let attendee = attendee
        return AsyncThrowingStream { [db] continuation in
            let task = Task {
                var assembler = FeedAssembler(attendee: attendee)
                var burst = FeedBurst()
                do {
                    for try await snapshot in events {
                        let action: FeedBurst.Action
                        if snapshot.location == Self.barrierPath {
                            action = burst.barrier()
                        } else if let index = locations.firstIndex(of: snapshot.location) {
                            assembler.receive(snapshot.node, at: index)
                            action = burst.event()
                        } else {
                            action = .none
                        }
                        switch action {
                        case .none: break
                        case .queueBarrier: core.queue.async { sink.yield(barrier) }
                        case .endBurst: if let feed = assembler.endOfBurst() { continuation.yield(feed) }
                        }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
                withExtendedLifetime(db) {}
            }
            continuation.onTermination = { _ in
                task.cancel()
                sink.finish()
            }
        }
    }

    /// The current feed: the first value `values` yields.
    public func currentItems() async throws -> [FeedItem] {
        for try await items in values { return items }
        throw ClientError.closed
    }
}
