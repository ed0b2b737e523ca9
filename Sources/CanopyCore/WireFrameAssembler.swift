// WireFrameAssembler -- joins wire-protocol v5 counted pieces back into messages (Protocol.md#Framing),
// for both ends: the server's sessions (client messages) and the client SDK (server messages).

/// Reassembles messages that the peer split into a bare piece count followed by that many pieces.
///
/// A frame of at most six characters that is an integer is a count: a positive one starts a message, any other
/// (the client keep-alive `0`) is no message at all. Every other frame outside a message is a whole message.
public struct WireFrameAssembler: Sendable {
    /// Why a frame sequence is unusable.
    public enum Failure: Error, Equatable {
        /// The pieces add up to more than `maxMessageBytes` UTF-8 bytes.
        case tooLarge
    }

    /// The largest reassembled message, in UTF-8 bytes.
    public let maxMessageBytes: Int
    private var remaining = 0
    private var buffer = ""

    /// - Parameter maxMessageBytes: The largest message accepted (positive).
    public init(maxMessageBytes: Int) {
        precondition(maxMessageBytes > 0, "the message limit must be positive")
        self.maxMessageBytes = maxMessageBytes
    }

    /// The UTF-8 bytes of the message being reassembled so far.
    public var bufferedByteCount: Int { buffer.utf8.count }

    /// Feeds one text frame; returns a complete message when one is ready, nil while buffering (or for a count
    /// that starts nothing). After `tooLarge` the assembler is empty again.
    public mutating func feed(_ frame: String) throws(Failure) -> String? {
        if remaining > 0 {
            buffer += frame
            remaining -= 1
            guard buffer.utf8.count <= maxMessageBytes else {
                remaining = 0
                buffer = ""
                throw .tooLarge
            }
            if remaining > 0 { return nil }
            defer { buffer = "" }
            return buffer
        }
        if frame.utf8.count <= 6, let count = Int(frame) {
            if count > 0 {
                remaining = count
                buffer = ""
            }
            return nil
        }
        return frame
    }
}
