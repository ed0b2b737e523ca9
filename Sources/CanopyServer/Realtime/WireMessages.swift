// WireMessages -- wire-protocol messages serialized once and framed once, for every session that receives them.

import CanopyCore
import CanopyNet

/// Serialized server messages together with their WebSocket frames, built once and shared.
///
/// A change is delivered to every session of a listen group (all with the same tag) as the same messages, so the
/// fan-out serializes them once and frames them once; each WebSocket then only copies the finished frames into
/// its batched output. Messages longer than 16384 UTF-16 units travel as a bare piece count followed by the
/// pieces (Protocol.md#Framing), cut on scalar boundaries; `texts` keeps each message whole for
/// transports that carry whole messages (long polling).
struct WireMessages {
    /// Largest frame, in UTF-16 units.
    static let maxFrameCharacters = 16384

    /// Each message's serialized JSON, whole.
    let texts: [[UInt8]]
    /// The messages as WebSocket text frames, long ones cut into counted pieces.
    let frames: WebSocketFrames

    /// Frames whole serialized messages (each valid UTF-8).
    init(texts: [[UInt8]]) {
        self.texts = texts
        var frames = WebSocketFrames()
        for text in texts { Self.appendFrames(of: text, to: &frames) }
        self.frames = frames
    }

    /// `d` pushes from `dataMessagePrefixes`, each closed with `tag` (if any) and the closing braces.
    init(closing prefixes: [[UInt8]], tag: Int64?) {
        var suffix: [UInt8] = []
        if let tag {
            suffix.append(contentsOf: Self.tagSeparator)
            JSONValue.int(tag).write(into: &suffix)
        }
        suffix.append(contentsOf: "}}}".utf8)
        self.init(
            texts: prefixes.map { prefix in
                var text: [UInt8] = []
                text.reserveCapacity(prefix.count + suffix.count)
                text.append(contentsOf: prefix)
                text.append(contentsOf: suffix)
                return text
            })
    }

    /// The serialized fixed parts of pushes: `{"t":"d","d":{"a":"d"|"m","b":{"p":`, `,"d":` and `,"t":`.
    private static let setOpening = Wire.pushOpening(Wire.Push.data)
    private static let mergeOpening = Wire.pushOpening(Wire.Push.merge)
    private static let dataSeparator = Wire.memberSeparator(Wire.Key.data)
    private static let tagSeparator = Wire.memberSeparator(Wire.Key.tag)

    /// The shared part of `d` (set) and `m` (merge) pushes for a list of updates: everything but the tag and the
    /// closing braces, so a group serializes each change once however many sessions listen, whatever their tags.
    static func dataMessagePrefixes(_ updates: [ListenUpdate]) -> [[UInt8]] {
        updates.map { update in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(128)
            switch update {
            case .set(let path, let value):
                bytes.append(contentsOf: Self.setOpening)
                JSONValue.string(path.description).write(into: &bytes)
                bytes.append(contentsOf: Self.dataSeparator)
                value.writeJSON(export: true, into: &bytes)
            case .merge(let path, let children, _):
                bytes.append(contentsOf: Self.mergeOpening)
                JSONValue.string(path.description).write(into: &bytes)
                bytes.append(contentsOf: Self.dataSeparator)
                bytes.append(UInt8(ascii: "{"))
                for (index, child) in children.enumerated() {
                    if index > 0 { bytes.append(UInt8(ascii: ",")) }
                    JSONValue.string(child.path.segments.joined(separator: "/")).write(into: &bytes)
                    bytes.append(UInt8(ascii: ":"))
                    child.value.writeJSON(export: true, into: &bytes)
                }
                bytes.append(UInt8(ascii: "}"))
            }
            return bytes
        }
    }

    /// Appends the frames one message travels in: itself, or a piece count followed by pieces of at most
    /// `maxFrameCharacters` UTF-16 units, cut on scalar boundaries. Linear in the message's UTF-8 bytes.
    static func appendFrames(of message: [UInt8], to frames: inout WebSocketFrames) {
        // A UTF-8 byte count bounds the UTF-16 count from above, so short messages need no counting.
        guard message.count > maxFrameCharacters else {
            frames.appendText(message)
            return
        }
        var cuts: [Int] = [0]
        var units = 0
        var index = 0
        while index < message.count {
            let lead = message[index]
            let length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
            let width = length == 4 ? 2 : 1
            if units + width > maxFrameCharacters {
                cuts.append(index)
                units = 0
            }
            units += width
            index += length
        }
        guard cuts.count > 1 else {
            frames.appendText(message)
            return
        }
        cuts.append(message.count)
        frames.appendText(Array(String(cuts.count - 1).utf8))
        for (start, end) in zip(cuts, cuts.dropFirst()) { frames.appendText(message[start..<end]) }
    }
}

extension WireTransport {
    /// Transports that carry whole messages get each text once.
    func send(_ messages: WireMessages) {
        for text in messages.texts { send(text: String(decoding: text, as: UTF8.self)) }
    }

    /// Transports that write no batches of their own send answers as they send anything else.
    func sendAnswer(_ messages: WireMessages) { send(messages) }
}

extension WebSocketConnection: WireTransport {
    /// Copies the shared, ready-made frames into this connection's batched output.
    func send(_ messages: WireMessages) {
        send(messages.frames)
    }

    /// Sends a reply, written with the loop pass's answers when it is the connection's first output of the pass.
    func sendAnswer(_ messages: WireMessages) {
        sendAnswer(messages.frames)
    }
}
