// PublishError -- why a publish, revert, rollback or directory load was refused.

import CanopyCore

/// A publish operation that cannot be carried out.
///
/// The error names the item key and the field (or the history entry, or the attendee index) but never the stored
/// values: item texts and attendee data stay out of messages and logs.
public struct PublishError: CanopyError, Hashable {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// `pendingContent` (or a snapshot) is a single value instead of an object of items.
        case contentNotObject
        /// A pending item is not an object.
        case itemNotObject
        /// A pending item has no `order`.
        case missingOrder
        /// A pending item's `order` is not a finite number.
        case nonNumericOrder
        /// A field of a pending item has an unusable shape (`field` says which, e.g. `tierIds/0`).
        case invalidField
        /// An id (tier, group, attendee or CSV row key) cannot be used as a database key.
        case invalidID
        /// Two derived copies would share one key in the same location (e.g. a CSV row key equals another item's).
        case keyCollision
        /// `publish --item` named a key that is neither pending nor published.
        case unknownItem
        /// `unpublish --item` named a key that is not published.
        case notPublished
        /// `rollback` named a history entry that does not exist (or holds no snapshot).
        case unknownHistoryEntry
        /// The attendee directory is malformed (`field` says where, e.g. `attendees/3/id`).
        case invalidDirectory
        /// Items to publish miss what their type needs (`incomplete` lists them; see Completeness).
        case incomplete
    }

    /// What went wrong.
    public let kind: Kind
    /// The item key, history id or nil (directory problems).
    public let key: String?
    /// The field inside the item or directory, when one is to blame.
    public let field: String?

    /// The incomplete items, for `.incomplete`.
    public let incomplete: [IncompleteItem]

    /// Creates an error about item (or history entry) `key` and its `field`.
    public init(_ kind: Kind, key: String? = nil, field: String? = nil) {
        self.kind = kind
        self.key = key
        self.field = field
        self.incomplete = []
    }

    /// A publish refused because of `items` (not empty).
    public init(incomplete items: [IncompleteItem]) {
        kind = .incomplete
        key = items.first?.key
        field = items.first?.missing.first
        incomplete = items
    }

    /// `invalid_item`, `not_found` or `invalid_directory`.
    public var code: String {
        switch kind {
        case .contentNotObject, .itemNotObject, .missingOrder, .nonNumericOrder, .invalidField,
            .invalidID, .keyCollision:
            "invalid_item"
        case .incomplete:
            "incomplete"
        case .unknownItem, .notPublished, .unknownHistoryEntry:
            "not_found"
        case .invalidDirectory:
            "invalid_directory"
        }
    }

    public var userMessage: String {
        let item = "Item '\(key ?? "?")'"
        let at = field.map { " field '\($0)'" } ?? ""
        switch kind {
        case .contentNotObject:
            return "The content must be an object of items keyed by item key, not a single value."
        case .itemNotObject:
            return "\(item) in pendingContent must be an object with order, type and visibility fields."
        case .missingOrder:
            return "\(item) has no 'order'; every item needs a numeric order."
        case .nonNumericOrder:
            return "\(item) has a non-numeric 'order'; use a number."
        case .invalidField:
            return "\(item)\(at) has an unusable shape; visibility lists hold strings or numbers, "
                + "checkAll is a boolean, type is a string and rawData rows are objects."
        case .invalidID:
            return
                "\(item)\(at) holds an id that can't be a database key (empty, too long, or containing "
                + ". $ # [ ] / or control characters)."
        case .keyCollision:
            return
                "\(item)\(at) would produce a copy whose key is already used in the same location; rename the item."
        case .unknownItem:
            return "\(item) is neither pending nor published."
        case .notPublished:
            return "\(item) is not published."
        case .unknownHistoryEntry:
            return "Publish history entry '\(key ?? "?")' does not exist or holds no snapshot."
        case .incomplete:
            let list = incomplete.prefix(5).map { item in
                "'\(item.title ?? item.key)' needs \(item.missing.joined(separator: ", "))"
            }.joined(separator: "; ")
            let more = incomplete.count > 5 ? "; and \(incomplete.count - 5) more" : ""
            let count = incomplete.count == 1 ? "1 item is" : "\(incomplete.count) items are"
            return "Nothing was published: \(count) incomplete: \(list)\(more)."
        case .invalidDirectory:
            return
                "Invalid attendee directory\(field.map { " at '\($0)'" } ?? ""): expected {\"attendees\": "
                + "[{\"id\", \"tierId\", \"groupIds\"}, …]} with unique string or number ids."
        }
    }
}
