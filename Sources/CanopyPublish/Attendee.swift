// Attendee -- who sees what: one attendee's id, tier and groups, and the event's attendee directory.

import CanopyCore

/// One attendee as the visibility rule sees them (the claims `userId`, `tierId` and `groups` of their token).
public struct Attendee: Sendable, Hashable {
    /// The tier that stands for "no tier".
    public static let defaultTier = "default"

    /// The attendee id (a string of digits in the seed, e.g. `"100203"`).
    public var id: String
    /// The tier id in string form; `"default"` when the attendee has none.
    public var tierId: String
    /// The group ids in string form.
    public var groupIds: [String]

    /// Creates an attendee; an empty `tierId` means the default tier.
    public init(id: String, tierId: String = Attendee.defaultTier, groupIds: [String] = []) {
        self.id = id
        self.tierId = tierId.isEmpty ? Attendee.defaultTier : tierId
        self.groupIds = groupIds
    }
}

/// The event's attendee directory (`seed/attendees.json`): used to preview feeds, to list who gains or loses
/// what in a dry run, and by `canopy token mint --attendee`.
public struct AttendeeDirectory: Sendable {
    /// The most attendees a directory may list.
    public static let maxAttendees = 1_000_000

    /// The event id, when the document names one (`eventId`).
    public var eventId: String?
    /// The attendees in document order.
    public var attendees: [Attendee]

    /// Creates a directory from attendees already in hand.
    public init(eventId: String? = nil, attendees: [Attendee]) {
        self.eventId = eventId
        self.attendees = attendees
    }

    /// The attendee with id `id` (exact bytes), if listed.
    public func attendee(id: String) -> Attendee? {
        attendees.first { sameKey($0.id, id) }
    }

    /// Parses a directory document.
    ///
    /// Accepts `{"eventId"?, "attendees": [{"id", "tierId"?, "groupIds"?}, …]}` or a bare array of attendees.
    /// Ids may be strings or numbers (numbers become their decimal form); a missing or null `tierId` means
    /// `"default"`; `groupIds` takes the shapes item lists take (`[]`, `{}`, missing). Other members (names,
    /// emails, `tiers`, `groups`) are ignored.
    /// - Throws: `PublishError` `.invalidDirectory` naming the offending member, e.g. `attendees/3/id`; duplicate
    ///   attendee ids are refused.
    public static func parse(_ json: JSONValue) throws(PublishError) -> AttendeeDirectory {
        let list: [JSONValue]
        var eventId: String?
        switch json {
        case .array(let items):
            list = items
        case .object:
            guard let items = json["attendees"]?.arrayValue else {
                throw PublishError(.invalidDirectory, field: "attendees")
            }
            list = items
            if let event = json["eventId"], !event.isNull {
                guard let text = IDList.text(of: event) else {
                    throw PublishError(.invalidDirectory, field: "eventId")
                }
                eventId = text
            }
        default:
            throw PublishError(.invalidDirectory)
        }
        guard list.count <= maxAttendees else {
            throw PublishError(.invalidDirectory, field: "attendees")
        }
        var attendees: [Attendee] = []
        attendees.reserveCapacity(list.count)
        var seen = Set<JSONKey>()
        for (index, entry) in list.enumerated() {
            let attendee = try parseAttendee(entry, at: "attendees/\(index)")
            guard seen.insert(JSONKey(attendee.id)).inserted else {
                throw PublishError(.invalidDirectory, field: "attendees/\(index)/id")
            }
            attendees.append(attendee)
        }
        return AttendeeDirectory(eventId: eventId, attendees: attendees)
    }

    private static func parseAttendee(_ entry: JSONValue, at location: String) throws(PublishError)
        -> Attendee
    {
        guard case .object = entry else { throw PublishError(.invalidDirectory, field: location) }
        guard let idValue = entry["id"], let id = IDList.text(of: idValue), Key.isValid(id) else {
            throw PublishError(.invalidDirectory, field: "\(location)/id")
        }
        var tier = Attendee.defaultTier
        if let tierValue = entry["tierId"], !tierValue.isNull {
            guard let text = IDList.text(of: tierValue), Key.isValid(text) else {
                throw PublishError(.invalidDirectory, field: "\(location)/tierId")
            }
            tier = text
        }
        var groups: [String] = []
        if let groupValue = entry["groupIds"] {
            let node: Node
            do { node = try Node.from(json: groupValue) } catch {
                throw PublishError(.invalidDirectory, field: "\(location)/groupIds")
            }
            do { groups = try IDList.parse(node, key: id, field: "groupIds") } catch {
                throw PublishError(.invalidDirectory, field: "\(location)/groupIds")
            }
        }
        return Attendee(id: id, tierId: tier, groupIds: groups)
    }
}
