// WebSocketFrame -- RFC 6455 frame opcodes and the frame encoder.
//
// Frame layout (§5.2):
//   byte 0: FIN(1) RSV1-3(3) opcode(4)
//   byte 1: MASK(1) payload-length(7): 0-125 literal, 126 → next 2 bytes, 127 → next 8 bytes (MSB 0);
//           the shortest form must be used
//   then the 4-byte masking key if MASK (every client→server frame), then the payload, XOR-ed with
//   key[i % 4] when masked.
// Control frames (close, ping, pong) are never fragmented and carry ≤ 125 bytes.

/// A WebSocket frame opcode.
public enum WebSocketOpcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// Encodes frames. Servers send unmasked frames; clients pass a masking key.
public enum WebSocketFrameEncoder {
    /// Appends one frame to `out`.
    /// - Parameters:
    ///   - opcode: the frame's opcode.
    ///   - payload: the payload bytes (≤ 125 for control frames).
    ///   - isFinal: the FIN bit.
    ///   - maskingKey: four bytes to mask with (client frames), or nil.
    public static func encode(
        _ opcode: WebSocketOpcode, payload: some Collection<UInt8>, isFinal: Bool = true,
        maskingKey: [UInt8]? = nil, into out: inout [UInt8]
    ) {
        precondition(!opcode.isControl || (isFinal && payload.count <= 125), "invalid control frame")
        precondition(maskingKey == nil || maskingKey?.count == 4, "masking key must be 4 bytes")
        out.append((isFinal ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        let count = payload.count
        if count < 126 {
            out.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            out.append(maskBit | 126)
            out.append(UInt8(count >> 8))
            out.append(UInt8(count & 0xFF))
        } else {
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: UInt64(count) >> UInt64(shift)))
            }
        }
        if let maskingKey {
            out.append(contentsOf: maskingKey)
            var index = 0
            for byte in payload {
                out.append(byte ^ maskingKey[index & 3])
                index += 1
            }
        } else {
            out.append(contentsOf: payload)
        }
    }

    /// A close frame payload: the status code (big-endian) then a UTF-8 reason, cut to fit 125 bytes.
    public static func closePayload(code: UInt16, reason: String = "") -> [UInt8] {
        var payload: [UInt8] = [UInt8(code >> 8), UInt8(code & 0xFF)]
        var reasonBytes = Array(reason.utf8.prefix(123))
        // Never cut inside a UTF-8 sequence.
        while !reasonBytes.isEmpty, String(validating: reasonBytes, as: UTF8.self) == nil {
            reasonBytes.removeLast()
        }
        payload.append(contentsOf: reasonBytes)
        return payload
    }
}
