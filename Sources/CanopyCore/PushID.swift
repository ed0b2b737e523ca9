// PushID -- Firebase push IDs: 20 characters that sort lexically in creation order.
//
// Format: 8 characters of millisecond timestamp (base 64, most significant first) followed by
// 12 characters (72 bits) of randomness, all from the ASCII-ordered alphabet
// `-0-9A-Z_a-z`, so string order equals numeric order. Within one generator, IDs are strictly
// increasing: when the clock repeats (or goes backwards, which we treat as "still the last
// millisecond") the previous random part is incremented by one with carry. If the random part
// overflows, the timestamp part advances by one millisecond.

import Synchronization

/// Generates Firebase-compatible push IDs, strictly increasing per generator.
///
/// ```swift
/// var generator = PushIDGenerator()
/// let id = generator.next(nowMilliseconds: clock.nowMilliseconds())  // "-NxY3...": 20 chars
/// ```
public struct PushIDGenerator: Sendable {
    /// The 64 symbols in ASCII order.
    static let alphabet = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)
    static let timestampLength = 8
    static let randomLength = 12
    /// Largest timestamp 8 base-64 symbols can carry.
    static let maxTimestamp: Int64 = (1 << 48) - 1

    private var lastTimestamp: Int64 = -1
    /// Symbol indices (0...63) of the last random part.
    private var lastRandom = [UInt8](repeating: 0, count: randomLength)

    /// A generator with no history; its first ID uses fresh randomness.
    public init() {}

    /// The next ID, using the system's secure random generator.
    /// - Parameter nowMilliseconds: Current (server) time in milliseconds since the Unix epoch.
    public mutating func next(nowMilliseconds: Int64) -> String {
        var random = SystemRandomNumberGenerator()
        return next(nowMilliseconds: nowMilliseconds, using: &random)
    }

    /// The next ID, drawing randomness from `random` (inject a seeded generator in tests).
    /// - Parameters:
    ///   - nowMilliseconds: Current (server) time in milliseconds since the Unix epoch; clamped to the
    ///     representable range, and never taken to be earlier than the previous call's.
    ///   - random: Source of the 72 random bits used when the millisecond changes.
    public mutating func next(nowMilliseconds: Int64, using random: inout some RandomNumberGenerator) -> String {
        let now = min(max(nowMilliseconds, 0), Self.maxTimestamp)
        if now > lastTimestamp {
            lastTimestamp = now
            for i in 0..<Self.randomLength { lastRandom[i] = UInt8(truncatingIfNeeded: random.next() & 63) }
        } else if !incrementRandom() {
            // 2^72 IDs in one millisecond is unreachable in practice; stay ordered anyway.
            lastTimestamp = min(lastTimestamp + 1, Self.maxTimestamp)
        }
        var id = [UInt8](repeating: 0, count: Self.timestampLength + Self.randomLength)
        var t = lastTimestamp
        for i in stride(from: Self.timestampLength - 1, through: 0, by: -1) {
            id[i] = Self.alphabet[Int(t & 63)]
            t >>= 6
        }
        for i in 0..<Self.randomLength { id[Self.timestampLength + i] = Self.alphabet[Int(lastRandom[i])] }
        return String(decoding: id, as: UTF8.self)
    }

    /// Adds one to the random part, carrying from the right; false if it wrapped to all zeros.
    private mutating func incrementRandom() -> Bool {
        var i = Self.randomLength - 1
        while i >= 0 {
            if lastRandom[i] < 63 {
                lastRandom[i] += 1
                return true
            }
            lastRandom[i] = 0
            i -= 1
        }
        return false
    }

    /// The millisecond timestamp encoded in a push ID, or nil if `id` is not a well-formed push ID.
    public static func timestamp(of id: String) -> Int64? {
        let bytes = Array(id.utf8)
        guard bytes.count == timestampLength + randomLength else { return nil }
        var value: Int64 = 0
        for (i, b) in bytes.enumerated() {
            guard let digit = alphabet.firstIndex(of: b) else { return nil }
            if i < timestampLength { value = value << 6 | Int64(digit) }
        }
        return value
    }
}

/// A thread-safe push ID source over one shared generator, reading time from a clock.
public final class PushIDSource: Sendable {
    private let generator = Mutex(PushIDGenerator())
    private let clock: any WallClock

    /// A source reading time from `clock` (pass the server clock, so IDs carry server time).
    public init(clock: any WallClock = SystemClock()) {
        self.clock = clock
    }

    /// The next ID at the clock's current time; strictly greater than every ID this source returned before.
    public func next() -> String {
        next(nowMilliseconds: clock.nowMilliseconds())
    }

    /// The next ID at `nowMilliseconds`; strictly greater than every ID this source returned before.
    public func next(nowMilliseconds: Int64) -> String {
        generator.withLock { $0.next(nowMilliseconds: nowMilliseconds) }
    }
}
