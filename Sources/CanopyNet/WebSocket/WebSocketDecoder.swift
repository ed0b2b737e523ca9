// WebSocketDecoder -- a pure, incremental RFC 6455 decoder: bytes in, whole messages and control frames out.
//
// Enforced (§5): RSV bits must be 0 (no extension is ever negotiated); opcodes other than 0, 1, 2, 8, 9, 10
// are refused; frames from a client must be masked (and from a server unmasked); lengths use the shortest
// form and the 64-bit form has its top bit clear; control frames are final and ≤ 125 bytes and may
// arrive between the fragments of a data message; a continuation needs a message in progress and a new
// data frame needs none. Text messages and close reasons must be valid UTF-8 (§8.1), checked once the
// message is complete. A message larger than `maxMessageBytes` is refused from its frame header, before
// its payload is buffered. Close payloads are empty or a valid status code (§7.4) plus a reason.
// Errors are final: every later call rethrows the same error.

/// A decoded WebSocket message or control frame.
public enum WebSocketEvent: Sendable, Equatable {
    case text(String)
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    /// A close frame: the peer's status code (nil if the frame had none) and reason.
    case close(code: UInt16?, reason: String)
}

/// An incremental WebSocket decoder. Feed bytes with ``append(_:)`` and pull events with ``next()``.
public struct WebSocketDecoder: Sendable {
    private static let compactionThreshold = 4096

    /// The largest message (all fragments together) accepted, in bytes.
    public let maxMessageBytes: Int
    /// True on the server side: incoming frames must be masked.
    public let expectsMaskedFrames: Bool
    private var buffer: [UInt8] = []
    private var readIndex = 0
    private var fragmented: (opcode: WebSocketOpcode, payload: [UInt8])?
    private var failure: WebSocketError?

    /// Creates a decoder.
    /// - Parameters:
    ///   - maxMessageBytes: the largest message accepted (1009 beyond).
    ///   - expectsMaskedFrames: true for a server decoding client frames.
    public init(maxMessageBytes: Int, expectsMaskedFrames: Bool = true) {
        self.maxMessageBytes = maxMessageBytes
        self.expectsMaskedFrames = expectsMaskedFrames
    }

    /// Bytes received but not yet consumed.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Bytes held for messages not complete yet: a frame still arriving and the fragments before it.
    public var heldByteCount: Int { bufferedByteCount + (fragmented?.payload.count ?? 0) }

    /// Appends received bytes. Ignored once the decoder has failed.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard failure == nil, !bytes.isEmpty else { return }
        if readIndex > 0
            && (readIndex == buffer.count || (readIndex >= Self.compactionThreshold && readIndex * 2 >= buffer.count))
        {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Decodes as far as the buffered bytes allow.
    /// - Returns: the next event, or nil when more bytes are needed.
    /// - Throws: ``WebSocketError``; the decoder then stays failed.
    public mutating func next() throws(WebSocketError) -> WebSocketEvent? {
        if let failure { throw failure }
        do {
            defer { releaseConsumedStorage() }
            while true {
                guard let frame = try nextFrame() else { return nil }
                if let event = try assemble(frame) { return event }
            }
        } catch {
            failure = error
            throw error
        }
    }

    /// Decodes a whole byte string; a pure entry point for fuzzing and tests.
    public static func decodeAll(
        _ bytes: [UInt8], maxMessageBytes: Int = 1 << 20, expectsMaskedFrames: Bool = true
    ) -> (events: [WebSocketEvent], error: WebSocketError?) {
        var decoder = WebSocketDecoder(maxMessageBytes: maxMessageBytes, expectsMaskedFrames: expectsMaskedFrames)
        decoder.append(bytes)
        return collectEvents { () throws(WebSocketError) in try decoder.next() }
    }

    /// Drops a fully consumed buffer, so an idle connection does not keep the capacity of its largest read.
    private mutating func releaseConsumedStorage() {
        guard readIndex > 0, readIndex == buffer.count else { return }
        buffer.removeAll(keepingCapacity: buffer.capacity <= Self.compactionThreshold)
        readIndex = 0
    }

    // MARK: Frames

    private struct Frame {
        var isFinal: Bool
        var opcode: WebSocketOpcode
        var payload: [UInt8]
        /// A whole, unfragmented text message already decoded (its `payload` is then empty).
        var text: String? = nil
    }

    private mutating func nextFrame() throws(WebSocketError) -> Frame? {
        guard bufferedByteCount >= 2 else { return nil }
        let first = buffer[readIndex]
        let second = buffer[readIndex + 1]
        guard first & 0x70 == 0 else { throw .protocolError(reason: "reserved bits set") }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else {
            throw .protocolError(reason: "unknown opcode")
        }
        let isFinal = first & 0x80 != 0
        let isMasked = second & 0x80 != 0
        guard isMasked == expectsMaskedFrames else {
            throw .protocolError(reason: expectsMaskedFrames ? "unmasked client frame" : "masked server frame")
        }
        let shortLength = Int(second & 0x7F)
        let lengthBytes = shortLength == 126 ? 2 : (shortLength == 127 ? 8 : 0)
        let headerLength = 2 + lengthBytes + (isMasked ? 4 : 0)
        guard bufferedByteCount >= headerLength else { return nil }
        var length = shortLength
        if lengthBytes > 0 {
            var value: UInt64 = 0
            for offset in 0..<lengthBytes { value = value << 8 | UInt64(buffer[readIndex + 2 + offset]) }
            guard lengthBytes == 2 ? value >= 126 : (value > 0xFFFF && value >> 63 == 0) else {
                throw .protocolError(reason: "payload length not in shortest form")
            }
            guard value <= UInt64(maxMessageBytes) else { throw .messageTooBig }
            length = Int(value)
        }
        if opcode.isControl {
            guard isFinal else { throw .protocolError(reason: "fragmented control frame") }
            guard length <= 125 else { throw .protocolError(reason: "control frame payload over 125 bytes") }
        } else {
            guard length <= maxMessageBytes - (fragmented?.payload.count ?? 0) else { throw .messageTooBig }
        }
        guard bufferedByteCount >= headerLength + length else { return nil }
        let payloadRange = (readIndex + headerLength)..<(readIndex + headerLength + length)
        // The payload is unmasked in place: the bytes are consumed by this frame and never read again.
        if isMasked {
            let keyStart = readIndex + 2 + lengthBytes
            let key = (buffer[keyStart], buffer[keyStart + 1], buffer[keyStart + 2], buffer[keyStart + 3])
            buffer.withUnsafeMutableBufferPointer { all in
                let bytes = UnsafeMutableBufferPointer(rebasing: all[payloadRange])
                for index in bytes.indices {
                    switch index & 3 {
                    case 0: bytes[index] ^= key.0
                    case 1: bytes[index] ^= key.1
                    case 2: bytes[index] ^= key.2
                    default: bytes[index] ^= key.3
                    }
                }
            }
        }
        readIndex += headerLength + length
        if opcode == .text && isFinal && fragmented == nil {
            // The common case, a whole text message in one frame, is decoded straight from the buffer.
            guard let text = String(validating: buffer[payloadRange], as: UTF8.self) else { throw .invalidUTF8 }
            return Frame(isFinal: true, opcode: .text, payload: [], text: text)
        }
        return Frame(isFinal: isFinal, opcode: opcode, payload: Array(buffer[payloadRange]))
    }

    // MARK: Messages

    private mutating func assemble(_ frame: Frame) throws(WebSocketError) -> WebSocketEvent? {
        switch frame.opcode {
        case .continuation:
            guard var message = fragmented else { throw .protocolError(reason: "continuation without a message") }
            message.payload.append(contentsOf: frame.payload)
            if !frame.isFinal {
                fragmented = message
                return nil
            }
            fragmented = nil
            return try complete(opcode: message.opcode, payload: message.payload)
        case .text, .binary:
            if let text = frame.text { return .text(text) }
            guard fragmented == nil else { throw .protocolError(reason: "new message inside a fragmented one") }
            if !frame.isFinal {
                fragmented = (frame.opcode, frame.payload)
                return nil
            }
            return try complete(opcode: frame.opcode, payload: frame.payload)
        case .ping:
            return .ping(frame.payload)
        case .pong:
            return .pong(frame.payload)
        case .close:
            return try Self.parseClose(frame.payload)
        }
    }

    private func complete(opcode: WebSocketOpcode, payload: [UInt8]) throws(WebSocketError) -> WebSocketEvent {
        guard opcode == .text else { return .binary(payload) }
        guard let text = String(validating: payload, as: UTF8.self) else { throw .invalidUTF8 }
        return .text(text)
    }

    private static func parseClose(_ payload: [UInt8]) throws(WebSocketError) -> WebSocketEvent {
        if payload.isEmpty { return .close(code: nil, reason: "") }
        guard payload.count >= 2 else { throw .protocolError(reason: "close payload of one byte") }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard isValidReceivedCloseCode(code) else { throw .protocolError(reason: "invalid close code") }
        guard let reason = String(validating: payload[2...], as: UTF8.self) else { throw .invalidUTF8 }
        return .close(code: code, reason: reason)
    }

    /// Codes a peer may send (RFC 6455 §7.4.1 and the IANA registry); 1004-1006 and 1015 are reserved.
    static func isValidReceivedCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }
}
