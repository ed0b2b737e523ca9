// CSVImport -- a CSV of personal text, web or video items turned into one `<type>CSV` pendingContent item.
//
// Columns (header names, case-insensitive): `email` or `id` / `attendeeId` (who the row is for), `description`,
// `url`, and optionally `title`. Each row is checked against the stored directory (email case-insensitively, or id)
// and becomes one `rawData` row, shaped as the seed's CSV rows are:
//   {"email"?, "attendeeIds": [id], "checkAll": false, "order", "type", "title", "text" | "url"+"description"?}
// Text rows carry the description as `text`. Rejected rows are reported with their line in the file.

import CanopyCore

/// The outcome of reading an import CSV.
public struct CSVImport: Sendable {
    /// One refused row.
    public struct Rejection: Sendable, Hashable {
        /// The line of the file (the header is line 1).
        public let row: Int
        /// The email or id the row gave.
        public let value: String
        /// Why it was refused.
        public let error: String

        /// `{"row", "value", "error"}`.
        public var json: JSONValue {
            .object([
                JSONMember("row", .int(Int64(row))), JSONMember("value", .string(value)),
                JSONMember("error", .string(error)),
            ])
        }
    }

    /// The item types a CSV can be imported as.
    public static let types = ["text", "web", "video"]

    /// The pendingContent item to write (nil when no row was accepted).
    public let item: JSONValue?
    /// The accepted rows.
    public let imported: Int
    /// The data rows of the file.
    public let total: Int
    /// The refused rows, in file order.
    public let rejected: [Rejection]

    /// Reads `text` as rows of `type` items titled `title` at `order`, for the attendees of `directory`.
    /// - Throws: `CSVError` when the file cannot be read, or lacks the columns the type needs.
    public init(csv text: String, type: String, title: String, order: Double, directory: DirectoryDocument)
        throws(CSVError)
    {
        let table = try CSVTable(parsing: text)
        let emailColumn = table.column("email", "e-mail")
        let idColumn = table.column("id", "attendeeid", "attendee id", "userid")
        guard emailColumn != nil || idColumn != nil else {
            throw CSVError("the header needs an 'email' or an 'id' column")
        }
        let urlColumn = table.column("url", "link")
        let descriptionColumn = table.column("description", "text")
        let titleColumn = table.column("title")
        let isText = type == "text"
        if !isText && urlColumn == nil { throw CSVError("a \(type) import needs a 'url' column") }
        if isText && descriptionColumn == nil { throw CSVError("a text import needs a 'description' column") }
        let byEmail = directory.idsByEmail
        let orderValue = ContentItem.orderValue(order)
        var rows: [JSONValue] = []
        var rejected: [Rejection] = []
        var seen = Set<JSONKey>()
        for row in table.rows {
            let email = CSVTable.value(row, emailColumn)
            let givenID = CSVTable.value(row, idColumn)
            let value = email.isEmpty ? givenID : email
            func reject(_ why: String) { rejected.append(Rejection(row: row.line, value: value, error: why)) }
            guard !value.isEmpty else {
                reject("empty email or id")
                continue
            }
            let id: String?
            if !givenID.isEmpty {
                id = directory.directory.attendee(id: givenID)?.id
            } else {
                id = byEmail[email.lowercased()]
            }
            guard let id else {
                reject("not in the directory")
                continue
            }
            let url = CSVTable.value(row, urlColumn)
            let description = CSVTable.value(row, descriptionColumn)
            if !isText && url.isEmpty {
                reject("missing url")
                continue
            }
            if isText && description.isEmpty {
                reject("missing description")
                continue
            }
            guard seen.insert(JSONKey(id)).inserted else {
                reject("duplicate attendee")
                continue
            }
            let rowTitle = CSVTable.value(row, titleColumn)
            var members: [JSONMember] = []
            if !email.isEmpty { members.append(JSONMember("email", .string(email))) }
            members += [
                JSONMember("attendeeIds", .array([.string(id)])), JSONMember("checkAll", false),
                JSONMember("order", orderValue), JSONMember("type", .string(type)),
                JSONMember("title", .string(rowTitle.isEmpty ? title : rowTitle)),
            ]
            if isText {
                members.append(JSONMember("text", .string(description)))
            } else {
                members.append(JSONMember("url", .string(url)))
                if !description.isEmpty { members.append(JSONMember("description", .string(description))) }
            }
            rows.append(.object(members))
        }
        imported = rows.count
        total = table.rows.count
        self.rejected = rejected
        item =
            rows.isEmpty
            ? nil
            : .object([
                JSONMember("order", orderValue), JSONMember("type", .string(type + "CSV")),
                JSONMember("checkAll", false), JSONMember("title", .string(title)),
                JSONMember("rawData", .array(rows)),
            ])
    }
}
