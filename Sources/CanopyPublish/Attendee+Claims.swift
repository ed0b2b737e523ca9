// Attendee+Claims -- an attendee as token claims (issue 5 §5) and back.
//
// Claims: `userId` (string), `tierId` (string; "default" when none), `groups` (object: group id → true) and `ns`
// (the event). `canopy token mint --attendee ID --directory FILE` writes them; the server reads them back to know
// whose feed a token may see.

import CanopyCore

extension Attendee {
    /// The claims of a token for this attendee in event `namespace` (omitted when nil).
    public func claims(namespace: String?) -> JSONValue {
        var members = [
            JSONMember("userId", .string(id)),
            JSONMember("tierId", .string(tierId)),
            JSONMember("groups", .object(groupIds.map { JSONMember($0, .bool(true)) })),
        ]
        if let namespace { members.append(JSONMember("ns", .string(namespace))) }
        return .object(members)
    }

    /// The attendee named by verified token claims, or nil when `userId` is missing or not a usable key.
    ///
    /// `tierId` may be missing (the default tier), a string or a number; `groups` may be an object of
    /// `id: true` members (others are ignored) or an array of ids. Malformed tiers and groups count as none.
    public init?(claims: JSONValue) {
        guard let idValue = claims["userId"], let id = IDList.text(of: idValue), Key.isValid(id) else { return nil }
        var tier = Attendee.defaultTier
        if let value = claims["tierId"], let text = IDList.text(of: value), Key.isValid(text) { tier = text }
        var groups: [String] = []
        switch claims["groups"] {
        case .object(let members)?:
            groups = members.filter { $0.value == .bool(true) && Key.isValid($0.key) }.map(\.key)
        case .array(let items)?:
            groups = items.compactMap { IDList.text(of: $0) }.filter(Key.isValid)
        default:
            break
        }
        self.init(id: id, tierId: tier, groupIds: groups)
    }
}
