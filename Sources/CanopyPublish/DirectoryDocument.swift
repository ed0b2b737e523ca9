// DirectoryDocument -- the attendee directory as the console stores it in the event: private/admin/directory.
//
// Stored shape (ids as strings, members that are absent left out):
//   {"eventId"?, "tiers": [{"id", "name"?}], "groups": [{"id", "name"?}],
//    "attendees": [{"id", "tierId", "groupIds"?, "email"?, "firstName"?, "lastName"?, "name"?}]}
// It is made from an `attendees.json` document (what `AttendeeDirectory.parse` reads, names and emails kept) or from
// a CSV with a header row: `id` (or `attendeeId`), `email`, `name`, `firstName`, `lastName`, `tier` (or `tierId`),
// `groups` (or `groupIds`: ids separated by `;`, `|` or spaces). The stored document parses back with
// `AttendeeDirectory.parse`, so dry runs and previews read it as they read a file.

import CanopyCore

/// The stored attendee directory: its document, the parsed directory, and the counts the targeting picker shows.
public struct DirectoryDocument: Sendable {
    /// Where the directory is stored in the event.
    public static let path = PublishLayout.directory

    /// The normalized document, as stored.
    public let json: JSONValue
    /// The parsed directory.
    public let directory: AttendeeDirectory

    /// Normalizes an `attendees.json` document.
    /// - Throws: `PublishError.invalidDirectory` naming the offending member.
    public init(document: JSONValue) throws(PublishError) {
        directory = try AttendeeDirectory.parse(document)
        let entries: [JSONValue]
        switch document {
        case .array(let items): entries = items
        default: entries = document["attendees"]?.arrayValue ?? []
        }
        var attendees: [JSONValue] = []
        attendees.reserveCapacity(entries.count)
        for (attendee, entry) in zip(directory.attendees, entries) {
            var members = [JSONMember("id", .string(attendee.id)), JSONMember("tierId", .string(attendee.tierId))]
            if !attendee.groupIds.isEmpty {
                members.append(JSONMember("groupIds", .array(attendee.groupIds.map { .string($0) })))
            }
            for field in ["email", "firstName", "lastName", "name"] {
                if let text = entry[field]?.stringValue, !text.isEmpty { members.append(JSONMember(field, .string(text))) }
            }
            attendees.append(.object(members))
        }
        var members: [JSONMember] = []
        if let eventId = directory.eventId { members.append(JSONMember("eventId", .string(eventId))) }
        for list in ["tiers", "groups"] {
            var named: [JSONValue] = []
            for (index, entry) in (document[list]?.arrayValue ?? []).enumerated() {
                guard let id = entry["id"].flatMap(IDList.text(of:)), Key.isValid(id) else {
                    throw PublishError(.invalidDirectory, field: "\(list)/\(index)/id")
                }
                var item = [JSONMember("id", .string(id))]
                if let name = entry["name"]?.stringValue { item.append(JSONMember("name", .string(name))) }
                named.append(.object(item))
            }
            members.append(JSONMember(list, .array(named)))
        }
        members.append(JSONMember("attendees", .array(attendees)))
        json = .object(members)
    }

    /// Reads the document stored at `path` in the event `root`; nil when none is stored.
    /// - Throws: `PublishError.invalidDirectory` when what is stored there is not a directory.
    public init?(root: Node) throws(PublishError) {
        let node = root.node(at: DirectoryDocument.path)
        if node.isEmpty { return nil }
        try self.init(document: node.json())
    }

    /// Reads a CSV directory.
    /// - Throws: `CSVError` naming the row and the problem.
    public static func csv(_ text: String) throws(CSVError) -> DirectoryDocument {
        let table = try CSVTable(parsing: text)
        guard let idColumn = table.column("id", "attendeeid", "attendee id", "userid") else {
            throw CSVError("the header has no 'id' column (id,email,name,tier,groups)")
        }
        let columns: [(String, Int?)] = [
            ("email", table.column("email")), ("name", table.column("name")),
            ("firstName", table.column("firstname", "first name")),
            ("lastName", table.column("lastname", "last name")),
        ]
        let tierColumn = table.column("tier", "tierid")
        let groupColumn = table.column("groups", "groupids", "group")
        var attendees: [JSONValue] = []
        for row in table.rows {
            let id = CSVTable.value(row, idColumn)
            guard !id.isEmpty else { throw CSVError("row \(row.line): the id is empty") }
            var members = [JSONMember("id", .string(id))]
            let tier = CSVTable.value(row, tierColumn)
            if !tier.isEmpty { members.append(JSONMember("tierId", .string(tier))) }
            let groups = CSVTable.value(row, groupColumn).split { $0 == ";" || $0 == "|" || $0 == " " }
            if !groups.isEmpty { members.append(JSONMember("groupIds", .array(groups.map { .string(String($0)) }))) }
            for (name, column) in columns {
                let text = CSVTable.value(row, column)
                if !text.isEmpty { members.append(JSONMember(name, .string(text))) }
            }
            attendees.append(.object(members))
        }
        do {
            return try DirectoryDocument(document: .object([JSONMember("attendees", .array(attendees))]))
        } catch {
            // `attendees/3/id` → the CSV line of that record.
            if let field = error.field, field.hasPrefix("attendees/"),
                let index = Int(field.split(separator: "/")[1]), index < table.rows.count
            {
                let what = field.split(separator: "/").dropFirst(2).joined(separator: "/")
                let reason =
                    what == "id" ? "the id is not usable as a key or is listed twice" : "the \(what) is not usable"
                throw CSVError("row \(table.rows[index].line): \(reason)")
            }
            throw CSVError(error.userMessage)
        }
    }

    /// The tiers and groups with their attendee counts: those the document names, in its order, then those only
    /// attendees use, in order of first use. `{"id", "name"?, "count"}` each.
    public func counts() -> (tiers: JSONValue, groups: JSONValue) {
        func list(_ named: JSONValue?, _ uses: [String]) -> JSONValue {
            var order: [String] = []
            var names: [String: String] = [:]
            var counts: [String: Int64] = [:]
            for entry in named?.arrayValue ?? [] {
                guard let id = entry["id"]?.stringValue, counts[id] == nil else { continue }
                order.append(id)
                counts[id] = 0
                names[id] = entry["name"]?.stringValue
            }
            for id in uses {
                if counts[id] == nil { order.append(id) }
                counts[id, default: 0] += 1
            }
            return .array(
                order.map { id in
                    var members = [JSONMember("id", .string(id))]
                    if let name = names[id] { members.append(JSONMember("name", .string(name))) }
                    members.append(JSONMember("count", .int(counts[id] ?? 0)))
                    return .object(members)
                })
        }
        return (
            list(json["tiers"], directory.attendees.map(\.tierId)),
            list(json["groups"], directory.attendees.flatMap(\.groupIds))
        )
    }

    /// Attendee ids by lowercased email (the first attendee listed with an email wins).
    public var idsByEmail: [String: String] {
        var out: [String: String] = [:]
        for entry in json["attendees"]?.arrayValue ?? [] {
            if let email = entry["email"]?.stringValue, let id = entry["id"]?.stringValue {
                out[email.lowercased()] = out[email.lowercased()] ?? id
            }
        }
        return out
    }
}
