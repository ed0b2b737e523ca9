// ServerSentEvents -- formats text/event-stream events (WHATWG HTML §9.2) for an HTTPStream.
//
// An event is `event: <name>` LF, one `data: <line>` LF per line of the data, then an empty line. Lines end
// in LF only: firebase-admin's SSE client splits fields on "\n", so CRLF would leave "\r" in event names.
// A CR, LF or CRLF inside the data starts a new `data:` line (the reader joins them back with LF); the name
// cannot hold line breaks, so they are dropped from it. A line starting with ':' is a comment.

/// Builders for Server-Sent Events bytes.
public enum ServerSentEvents {
    /// The `Content-Type` of a stream; the charset matters to Python `requests`, which otherwise decodes
    /// `text/*` as ISO-8859-1.
    public static let contentType = "text/event-stream; charset=utf-8"

    /// Headers for starting a stream with ``HTTPResponder/startStream(status:headers:)``.
    public static let responseHeaders: [(String, String)] = [
        ("Content-Type", contentType), ("Cache-Control", "no-cache"),
    ]

    /// One event with a name and data.
    /// - Parameters:
    ///   - name: the event type (`put`, `patch`, `keep-alive`, ...).
    ///   - data: the payload; line breaks split it over several `data:` lines.
    /// - Returns: the bytes to send, ending with the blank line that dispatches the event.
    public static func event(_ name: String, data: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(name.utf8.count + data.utf8.count + 16)
        out.append(contentsOf: "event: ".utf8)
        out.append(contentsOf: name.utf8.filter { $0 != 0x0A && $0 != 0x0D })
        out.append(0x0A)
        appendDataLines(data, to: &out)
        out.append(0x0A)
        return out
    }

    /// A comment line (ignored by readers; useful as a heartbeat that dispatches no event).
    public static func comment(_ text: String) -> [UInt8] {
        Array(":".utf8) + text.utf8.filter { $0 != 0x0A && $0 != 0x0D } + [0x0A, 0x0A]
    }

    private static func appendDataLines(_ data: String, to out: inout [UInt8]) {
        let bytes = Array(data.utf8)
        var lineStart = 0
        var index = 0
        func emitLine(until end: Int) {
            out.append(contentsOf: "data: ".utf8)
            out.append(contentsOf: bytes[lineStart..<end])
            out.append(0x0A)
        }
        while index < bytes.count {
            switch bytes[index] {
            case 0x0D:
                emitLine(until: index)
                index += index + 1 < bytes.count && bytes[index + 1] == 0x0A ? 2 : 1
                lineStart = index
            case 0x0A:
                emitLine(until: index)
                index += 1
                lineStart = index
            default:
                index += 1
            }
        }
        emitLine(until: bytes.count)
    }
}
