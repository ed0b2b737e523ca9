// HTTPDate -- the `Date` response field (RFC 9110 §6.6.1, IMF-fixdate), formatted at most once a second.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Synchronization

/// IMF-fixdate timestamps such as `Sun, 06 Nov 1994 08:49:37 GMT`.
enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    /// The second last formatted and its text: servers answer many requests per second.
    private static let cache = Mutex<(second: Int, text: [UInt8])>((-1, []))

    /// The IMF-fixdate of `seconds` since 1970-01-01T00:00:00Z.
    static func format(secondsSince1970 seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = Int(parts.tm_year) + 1900
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(year) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// The current second's IMF-fixdate, as bytes.
    static func now() -> [UInt8] {
        let second = Int(time(nil))
        return cache.withLock { cached in
            if cached.second != second { cached = (second, Array(format(secondsSince1970: second).utf8)) }
            return cached.text
        }
    }
}
