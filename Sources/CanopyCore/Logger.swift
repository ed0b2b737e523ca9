// Logger -- one logfmt (or JSON) line per event on stderr, modelled on swift-log.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Synchronization

/// A log severity, lowest first.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case trace, debug, info, notice, warning, error, critical
    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
    public var name: String { "\(self)" }
    public init?(name: String) {
        guard let level = LogLevel.allCases.first(where: { $0.name == name }) else { return nil }
        self = level
    }
}

/// Process-wide log settings. Set once at start-up by the CLI.
public enum LogSettings {
    private static let state = Mutex<(level: LogLevel, json: Bool)>((.info, false))
    public static var level: LogLevel {
        get { state.withLock { $0.level } }
        set { state.withLock { $0.level = newValue } }
    }
    public static var json: Bool {
        get { state.withLock { $0.json } }
        set { state.withLock { $0.json = newValue } }
    }
}

/// A labelled logger. Event names are stable dotted identifiers (`conn.open`, `store.commit`).
///
/// Never log tokens, secrets, stored values or request bodies.
public struct Logger: Sendable {
    public let label: String
    public init(label: String) { self.label = label }

    public func log(
        _ level: LogLevel, _ event: @autoclosure () -> String,
        _ metadata: @autoclosure () -> [String: String] = [:]
    ) {
        guard level >= LogSettings.level else { return }
        let line = Logger.format(
            level: level, label: label, event: event(), metadata: metadata(), json: LogSettings.json)
        writeStandardError(line + "\n")
    }

    public func trace(_ e: @autoclosure () -> String, _ m: @autoclosure () -> [String: String] = [:]) {
        log(.trace, e(), m())
    }
    public func debug(_ e: @autoclosure () -> String, _ m: @autoclosure () -> [String: String] = [:]) {
        log(.debug, e(), m())
    }
    public func info(_ e: @autoclosure () -> String, _ m: @autoclosure () -> [String: String] = [:]) {
        log(.info, e(), m())
    }
    public func notice(_ e: @autoclosure () -> String, _ m: @autoclosure () -> [String: String] = [:]) {
        log(.notice, e(), m())
    }
    public func warning(_ e: @autoclosure () -> String, _ m: @autoclosure () -> [String: String] = [:]) {
        log(.warning, e(), m())
    }
    public func error(_ e: @autoclosure () -> String, _ m: @autoclosure () -> [String: String] = [:]) {
        log(.error, e(), m())
    }

    static func format(level: LogLevel, label: String, event: String, metadata: [String: String], json: Bool)
        -> String
    {
        let ts = timestamp()
        let fields = metadata.sorted { $0.key < $1.key }
        if json {
            var parts = [
                "\"ts\":\(quote(ts))", "\"level\":\(quote(level.name))", "\"label\":\(quote(label))",
                "\"event\":\(quote(event))",
            ]
            for (k, v) in fields { parts.append("\(quote(k)):\(quote(v))") }
            return "{" + parts.joined(separator: ",") + "}"
        }
        var line = "ts=\(ts) level=\(level.name) label=\(label) event=\(event)"
        for (k, v) in fields {
            let needsQuote = v.isEmpty || v.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" })
            line += " \(k)=" + (needsQuote ? quote(v) : v)
        }
        return line
    }

    private static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case _ where u.value < 0x20: out += "\\u" + String(u.value, radix: 16).leftPad(4)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    private static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var t = time_t(ts.tv_sec)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        let ms = Int(ts.tv_nsec) / 1_000_000
        return "\(tmv.tm_year + 1900)-\(two(tmv.tm_mon + 1))-\(two(tmv.tm_mday))T"
            + "\(two(tmv.tm_hour)):\(two(tmv.tm_min)):\(two(tmv.tm_sec)).\(String(ms).leftPad(3))Z"
    }
    private static func two(_ v: Int32) -> String { String(v).leftPad(2) }
}

extension String {
    fileprivate func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// Writes text to file descriptor 2 in one `write(2)` call (lines from several threads don't interleave).
public func writeStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let n = write(2, buffer.baseAddress! + offset, buffer.count - offset)
            if n <= 0 { break }
            offset += n
        }
    }
}
