// WebSocketFrames -- server frames encoded once and sent as they are to many connections (fan-out).

/// One or more complete, unmasked server-to-client WebSocket frames, encoded once.
///
/// A fan-out that sends the same message to many connections encodes it here once and hands the value to each
/// ``WebSocketConnection/send(_:)``: every connection then only copies the finished bytes into its batched output,
/// instead of encoding the frame header and payload again. The bytes are a copy-on-write array, so the value is
/// shared (not copied) between the places that hold it.
///
/// ```swift
/// var frames = WebSocketFrames()
/// frames.appendText(Array(#"{"t":"d","d":{"a":"d","b":{"p":"/room","d":1}}}"#.utf8))
/// for socket in subscribers { socket.send(frames) }
/// ```
public struct WebSocketFrames: Sendable, Equatable {
    /// The encoded frames, back to back.
    public private(set) var bytes: [UInt8] = []
    /// How many frames the value holds.
    public private(set) var count = 0

    /// No frames.
    public init() {}

    /// Frames holding one text message each, in order.
    /// - Parameter texts: the messages; each becomes one final text frame.
    public init(texts: some Sequence<String>) {
        for text in texts { appendText(text.utf8) }
    }

    /// True when no frame has been appended.
    public var isEmpty: Bool { count == 0 }

    /// Appends one final text frame. The caller guarantees `payload` is valid UTF-8 (a peer closes the
    /// connection with 1007 otherwise).
    public mutating func appendText(_ payload: some Collection<UInt8>) {
        WebSocketFrameEncoder.encode(.text, payload: payload, into: &bytes)
        count += 1
    }

    /// Appends one final binary frame.
    public mutating func appendBinary(_ payload: some Collection<UInt8>) {
        WebSocketFrameEncoder.encode(.binary, payload: payload, into: &bytes)
        count += 1
    }

    /// Appends the frames of `other` after these.
    public mutating func append(_ other: WebSocketFrames) {
        bytes.append(contentsOf: other.bytes)
        count += other.count
    }
}
