// WireFraming -- the client side of wire-protocol v5 framing: counted pieces in, pieces out (Protocol.md#Framing).

import CanopyCore

/// The client's reassembler of counted server messages: the shared one, with the client's size limit.
typealias FrameAssembler = WireFrameAssembler

extension WireFrameAssembler {
    /// The largest reassembled server message, in UTF-8 bytes (a 16 MB write plus envelope, with UTF-8 headroom).
    static let clientMaxMessageBytes = 64 * 1024 * 1024

    /// An assembler with the client's limit.
    init() { self.init(maxMessageBytes: Self.clientMaxMessageBytes) }
}

enum WireFraming {
    /// The largest frame, in UTF-16 units.
    static let maxFrameUnits = 16384

    /// The frames one outgoing message travels in: itself, or a count then pieces cut on scalar boundaries.
    static func frames(for text: String) -> [String] {
        if text.utf16.count <= maxFrameUnits { return [text] }
        var pieces: [String] = []
        var current = String.UnicodeScalarView()
        var units = 0
        for scalar in text.unicodeScalars {
            let width = scalar.value > 0xFFFF ? 2 : 1
            if units + width > maxFrameUnits {
                pieces.append(String(current))
                current = String.UnicodeScalarView()
                units = 0
            }
            current.append(scalar)
            units += width
        }
        if !current.isEmpty { pieces.append(String(current)) }
        return [String(pieces.count)] + pieces
    }
}
