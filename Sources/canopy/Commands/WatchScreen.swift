// WatchScreen -- what `canopy watch` shows: a header (event, connection state, pending writes) and the feed or
// value; redrawn in place on a terminal, printed as separated blocks otherwise.

import CanopyClient
import CanopyCore

/// The state `canopy watch` displays; `render()` turns it into text.
struct WatchScreen {
    /// The block separator when stdout is not a terminal: tests and pipes split the output on it.
    static let separator = "---"
    /// The widest item label shown.
    static let maxLabelLength = 72

    enum Content {
        case waiting
        case feed([FeedItem])
        case value(JSONValue, fromCache: Bool)
    }

    var namespace: String
    /// `feed of 100201 (tier 101, groups 11)` or `/path`.
    var subject: String
    var connection = ConnectionState.connecting
    var pendingWrites = 0
    var content = Content.waiting

    /// The screen as lines of text (no trailing separator).
    func render() -> String {
        var lines = [
            "canopy watch · \(namespace) · \(subject) · \(Self.describe(connection)) · pending writes: \(pendingWrites)"
        ]
        switch content {
        case .waiting:
            lines.append("(no data yet)")
        case .feed(let items):
            for (index, item) in items.enumerated() {
                lines.append("\(index + 1). \(item.key)  \(Self.label(of: item))")
            }
            lines.append("(\(items.count) item\(items.count == 1 ? "" : "s"))")
        case .value(let value, let fromCache):
            lines.append(value.serialized(pretty: true))
            if fromCache { lines.append("(from cache)") }
        }
        return lines.joined(separator: "\n")
    }

    static func describe(_ state: ConnectionState) -> String {
        switch state {
        case .connecting: "connecting"
        case .connected: "connected"
        case .disconnected: "disconnected (retrying)"
        case .offline: "offline"
        case .closed: "closed"
        }
    }

    /// `[type] title` (or text, url, survey id), on one line, shortened.
    static func label(of item: FeedItem) -> String {
        let type = item.type.map { "[\($0)] " } ?? ""
        let text = ["title", "text", "url", "surveyId"].lazy.compactMap { item[$0]?.stringValue }.first ?? ""
        var line = String(text.map { $0.isNewline ? " " : $0 })
        if line.count > maxLabelLength { line = String(line.prefix(maxLabelLength - 1)) + "…" }
        return type + line
    }
}
