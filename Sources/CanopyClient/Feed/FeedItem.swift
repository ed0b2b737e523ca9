// FeedItem -- one item of an attendee's feed: its key and its fields as plain JSON.

import CanopyCore

/// One content item as an attendee sees it (`order`, `type`, `title`, `url`, …).
public struct FeedItem: Sendable, Equatable, Identifiable {
    /// The item's key (the same in every location it was copied to).
    public let key: String
    /// The item's fields as plain JSON (an object for well-formed items).
    public let fields: JSONValue

    /// Creates an item.
    public init(key: String, fields: JSONValue) {
        self.key = key
        self.fields = fields
    }

    /// The key: items are unique by key within a feed.
    public var id: String { key }

    /// The field named `name`, if present.
    public subscript(name: String) -> JSONValue? { fields[name] }

    /// The numeric `order` the feed is sorted by, if the item has one.
    public var order: Double? { fields["order"]?.doubleValue }

    /// The item's `type` (`text`, `web`, `html`, `video`, `survey`, …), if it is a string.
    public var type: String? { fields["type"]?.stringValue }
}
