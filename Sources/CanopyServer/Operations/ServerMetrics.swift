// ServerMetrics -- the daemon's counters and histograms, read by the Prometheus export (`/.canopy/metrics`).
//
// Counters are plain integers owned by the event loop: the daemon's request handling, fan-out and write
// pipeline all run on its one loop thread, so an increment costs one add, no lock and no atomic. The scrape runs
// on the same loop and reads them directly. The store threads' timings (commit, WAL sync) are histograms with a
// lock of their own, taken once per transaction or sync, never per message. Gauges (connections, listens, open
// namespaces, process figures) are computed at scrape time, not maintained.
// See Architecture.md#Operations-and-draining.

import CanopyCore

/// What the daemon counts. Loop-confined, except the `LatencyHistogram`s, which are thread-safe.
final class ServerMetrics {
    /// Writes answered, by outcome: `ok`, or the `WriteError` code (`permission_denied`, `invalid_data`, …).
    private(set) var writesByOutcome: [String: Int] = [:]
    /// Requests the security rules (or an admin-only endpoint) refused, by operation (`read`, `write`, `admin`).
    private(set) var ruleDenials: [String: Int] = [:]
    /// Messages sent to subscribers, by transport (`websocket`, `long_poll`, `sse`).
    var wireMessagesSent = 0
    var longPollMessagesSent = 0
    var sseMessagesSent = 0
    /// Changes serialized for subscribers: once per listen group, update and transport, however many listen
    /// (the fan-out shares the bytes; see Architecture.md#The-fan-out).
    var pushSerializations = 0
    /// Namespace trees loaded from their files: at first use, and again after being closed idle.
    var namespaceLoads = 0
    /// REST reads answered from a namespace's file while its tree was loading (RESTEarlyRead).
    private(set) var earlyReads = 0
    /// Publish-engine actions (publish, unpublish, revert, rollback) answered, by outcome.
    private(set) var publishesByOutcome: [String: Int] = [:]
    /// Each publish-engine action's time from request to durable answer, in seconds.
    let publishDuration = LatencyHistogram()
    /// Each store transaction (mutations and COMMIT), on the store threads.
    let commitLatency = LatencyHistogram()
    /// Each fdatasync of a WAL (`--sync full`), on the store threads.
    let syncLatency = LatencyHistogram()

    func countWrite(_ outcome: String) {
        writesByOutcome[outcome, default: 0] += 1
    }

    func countDenial(_ operation: AccessOperation) {
        let label =
            switch operation {
            case .read: "read"
            case .write, .update: "write"
            case .admin: "admin"
            }
        ruleDenials[label, default: 0] += 1
    }

    func countEarlyRead() { earlyReads += 1 }

    func countPublish(_ outcome: String, since start: UInt64) {
        publishesByOutcome[outcome, default: 0] += 1
        publishDuration.observe(since: start)
    }
}
