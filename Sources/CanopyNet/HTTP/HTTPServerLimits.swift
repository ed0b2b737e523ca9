// HTTPServerLimits -- the sizes, counts and timeouts an HTTPServer enforces per connection.

/// Limits and timeouts of an ``HTTPServer``. The defaults suit a database daemon behind no proxy.
public struct HTTPServerLimits: Sendable, Equatable {
    /// Request line plus header fields, in bytes (431 beyond). Default 16 KiB.
    public var maxHeaderBytes = 16 * 1024
    /// Header fields per request (431 beyond). Default 100.
    public var maxHeaderCount = 100
    /// Body bytes per request (413 beyond). Default 256 MiB.
    public var maxBodyBytes = 256 * 1024 * 1024
    /// Body bytes of all requests in flight together, on every connection (503 with `Retry-After` beyond),
    /// WebSocket messages being assembled included. Default 256 MiB.
    public var maxBodyMemoryBytes = 256 * 1024 * 1024
    /// The whole request head must arrive within this time of its first byte (slowloris), else 408. Default 10 s.
    public var headerTimeoutMs: Int64 = 10_000
    /// A keep-alive connection with no request in progress is closed after this time. Default 120 s.
    /// A fresh connection gets at most ``headerTimeoutMs`` to send its first byte.
    public var idleTimeoutMs: Int64 = 120_000
    /// A request body that makes no progress for this long gets 408. Default 30 s.
    public var bodyTimeoutMs: Int64 = 30_000
    /// Open connections; beyond this, new ones get 503 and are closed. Default 10 000.
    public var maxConnections = 10_000
    /// Requests parsed but not yet answered on one connection; reading pauses beyond this. Default 64.
    public var maxPipelinedRequests = 64
    /// Unwritten output above which a connection stops reading new requests. Default 1 MiB.
    public var outputSoftLimitBytes = 1024 * 1024
    /// Unwritten output of a streaming connection (SSE, WebSocket) above which it is closed, at the end of
    /// the loop pass. Plain responses are exempt: the soft limit already stops new requests. Default 32 MiB.
    public var outputHardLimitBytes = 32 * 1024 * 1024
    /// Unwritten output of all streaming connections together; past it, at the end of the loop pass, the
    /// connections with the largest backlogs are closed first until the rest fit. Default 512 MiB.
    public var outputMemoryLimitBytes = 512 * 1024 * 1024
    /// A graceful shutdown force-closes whatever is still open after this time. Default 10 s.
    public var shutdownTimeoutMs: Int64 = 10_000
    /// After an error response the server reads and discards input for up to this long before closing,
    /// so the client sees the response rather than a reset. Default 2 s.
    public var lingerTimeoutMs: Int64 = 2_000

    /// Creates the default limits; adjust fields as needed.
    public init() {}

    /// The subset the parser enforces.
    public var parserLimits: HTTPParserLimits {
        HTTPParserLimits(maxHeaderBytes: maxHeaderBytes, maxHeaderCount: maxHeaderCount, maxBodyBytes: maxBodyBytes)
    }
}
