// LongPollLimits -- the counts, sizes and timeouts the `/.lp` transport enforces.

/// Limits and timeouts of the long-poll transport. The defaults fit the Firebase JS SDK, which sends segments of
/// at most 1,840 characters, keeps at most two polls open and opens a fresh poll every 25 s.
struct LongPollLimits: Equatable {
    /// Live long-poll sessions per server; `start` beyond this is refused with 503.
    var maxSessions = 10_000
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
    /// Bytes of server messages waiting for a poll; a client that stops polling is dropped beyond this.
    var maxOutboxBytes = 32 * 1024 * 1024
    /// A poll with nothing to deliver is answered empty after this long (the SDK re-polls at 25 s anyway).
    var pollHoldMilliseconds: Int64 = 20_000
    /// A session that sent no request for this long is closed and its onDisconnect operations run.
    var idleTimeoutMilliseconds: Int64 = 60_000
    /// How often idle sessions are looked for.
    var sweepIntervalMilliseconds: Int64 = 2_000
}
