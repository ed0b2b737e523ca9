// HTTPStream -- a close-delimited streaming response body (Server-Sent Events).

/// The body of a streaming response. Loop-confined.
///
/// Bytes are batched and written once per loop pass. ``onClose`` fires once when the stream ends for any
/// reason other than the owner's own ``close()``: the client disconnected, its output exceeded the hard
/// limit, or the server shut down.
public final class HTTPStream {
    private let link: ConnectionLink?
    /// The connection, or nil once it is gone.
    private var connection: HTTPConnection? { link?.target }
    let head: [UInt8]
    var isHeadWritten = false
    private(set) var buffer: [UInt8] = []
    /// The owner called close(); the connection closes once the buffer is written.
    private(set) var isFinished = false

    /// True once the stream has ended; ``send(_:)`` then does nothing.
    public private(set) var isClosed = false
    /// Called once when the client or the server ends the stream (not after ``close()``).
    public var onClose: (() -> Void)?

    init(connection: HTTPConnection?, head: [UInt8]) {
        self.link = connection?.link
        self.head = head
    }

    /// Bytes accepted but not yet written to the socket (compare with the server's soft limit to shed load).
    public var bufferedBytes: Int {
        buffer.count + (connection?.pendingOutputBytes ?? 0)
    }

    /// Bytes held by the stream itself (not yet moved to the connection's output).
    var bufferedBytesInStream: Int { buffer.count }

    /// Queues `bytes` for the client.
    public func send(_ bytes: [UInt8]) {
        guard !isClosed, let connection else { return }
        connection.loop.assertInLoop()
        buffer.append(contentsOf: bytes)
        connection.markDirty()
    }

    /// Ends the stream after the queued bytes are written, then closes the connection.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        isFinished = true
        connection?.markDirty()
    }

    /// Takes the queued bytes for writing.
    func takeBuffer() -> [UInt8] {
        defer { buffer = [] }
        return buffer
    }

    /// Ends the stream from the connection's side.
    func markClosed(notify: Bool) {
        guard !isClosed else { return }
        isClosed = true
        isFinished = true
        buffer = []
        let callback = onClose
        onClose = nil
        if notify { callback?() }
    }
}
