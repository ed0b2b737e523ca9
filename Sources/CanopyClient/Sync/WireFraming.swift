// WireFraming -- the client side of wire-protocol v5 framing: counted pieces in, pieces out (protocol doc §3.2).

/// Reassembles messages that the server split into a piece count followed by pieces.
struct FrameAssembler: Sendable {
    /// The largest reassembled message, in UTF-8 bytes (a 16 MB write plus envelope, with UTF-8 headroom).
    static let maxMessageBytes = 64 * 1024 * 1024
    private var remaining = 0
    private var buffer = ""

    /// Why a frame sequence is unusable.
    enum Failure: Error, Equatable { case tooLarge }

    /// Feeds one text frame; returns a complete message when one is ready, nil while buffering.
    mutating func feed(_ frame: String) throws(Failure) -> String? {
        if remaining > 0 {
            buffer += frame
            remaining -= 1
            guard buffer.utf8.count <= Self.maxMessageBytes else {
                remaining = 0
                buffer = ""
                throw .tooLarge
            }
            if remaining > 0 { return nil }
            defer { buffer = "" }
            return buffer
        }
        if frame.utf8.count <= 6, let count = Int(frame), count > 0 {
            remaining = count
            buffer = ""
            return nil
        }
        return frame
    }
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
