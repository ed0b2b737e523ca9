// LongPollLimits -- the counts, sizes and timeouts the `/.lp` transport enforces.

/// Limits and timeouts of the long-poll transport. The defaults fit the Firebase JS SDK, which sends segments of
/// at most 1,840 characters, keeps at most two polls open and opens a fresh poll every 25 s.
///
/// Budgets nest (Architecture.md#Bounded-resources): a session's pending segments are bounded, the sessions of one
/// client address and their pending segments are bounded below the server's totals, so no single address can use
/// up what the others need.
struct LongPollLimits: Equatable {
    /// Live long-poll sessions per server; `start` beyond this is refused with 503.
    var maxSessions = 10_000
    /// Live long-poll sessions of one client address (an IPv6 client: its /64); `start` beyond this is refused
    /// with 429. Kept below `maxSessions`, so one address cannot exhaust the server's sessions.
    var maxSessionsPerAddress = 100
    /// Segments (`seg<i>`/`ts<i>`/`d<i>` triples) in one request.
    var maxSegmentsPerRequest = 64
    /// Characters of one segment's data.
    var maxSegmentCharacters = 8_192
    /// Segments one message may be cut into (`ts`): a 17 MB message is about 13,000 SDK segments.
    var maxSegmentsPerMessage = 16_384
    /// How far ahead of the next expected segment a segment may be (out-of-order arrival).
    var maxSegmentWindow = 32_768
    /// Characters of segments received but not yet reassembled (the base64 of the 17 MB message limit).
    var maxPendingCharacters = 24 * 1024 * 1024
    /// Characters of those segments that arrived ahead of a gap (out of order). The SDK has at most two requests
    /// in flight, so a few segments at most are ever ahead; everything else arrives in order.
    var maxOutOfOrderCharacters = 256 * 1024
    /// Pending segment characters of all sessions of one client address (room for one largest message).
    var maxPendingCharactersPerAddress = 32 * 1024 * 1024
    /// Pending segment characters of all sessions; a request that would pass it is refused with 503 and its
    /// session ends.
    var maxTotalPendingCharacters = 256 * 1024 * 1024
    /// Bytes of server messages waiting for a poll; a client that stops polling is dropped beyond this.
    var maxOutboxBytes = 32 * 1024 * 1024
    /// A poll with nothing to deliver is answered empty after this long (the SDK re-polls at 25 s anyway).
    var pollHoldMilliseconds: Int64 = 20_000
    /// A session that sent no request for this long is closed and its onDisconnect operations run.
    var idleTimeoutMilliseconds: Int64 = 60_000
    /// A session that has not polled since its `start` is closed after this long (the SDK polls at once).
    var firstPollTimeoutMilliseconds: Int64 = 15_000
    /// A session that has not authenticated, and holds no poll, is closed after this long without a request or
    /// an answer to one of its polls (the SDK keeps a poll held, and re-polls as soon as one is answered).
    var unauthenticatedIdleTimeoutMilliseconds: Int64 = 15_000
    /// How often idle sessions are looked for.
    var sweepIntervalMilliseconds: Int64 = 2_000
}
