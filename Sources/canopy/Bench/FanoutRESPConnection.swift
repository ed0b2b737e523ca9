// FanoutRESPConnection -- a minimal non-blocking RESP2 client connection for the Redis side of the fan-out bench.

import CanopyNet

/// One TCP connection speaking RESP2 on an EventLoop: commands out (batched once per loop pass), replies in.
/// Loop-confined. Replies are handed over as their elements (an array's items, or the single value).
final class FanoutRESPConnection {
    private static let maxBufferedInput = 64 * 1024 * 1024

    private let socket: LoopClientSocket
    private var input: [UInt8] = []
    private var inputOffset = 0

    /// Called once the TCP connection is established.
    var onOpen: (() -> Void)? {
        get { socket.onOpen }
        set { socket.onOpen = newValue }
    }
    /// Called for each complete reply with its elements.
    var onReply: (([ArraySlice<UInt8>]) -> Void)?
    /// Called once when the connection fails or the server closes it.
    var onFailure: ((String) -> Void)? {
        get { socket.onFailure }
        set { socket.onFailure = newValue }
    }

    private var closed: Bool { socket.closed }

    init(loop: EventLoop, host: String, port: Int) throws(NetError) {
        socket = try LoopClientSocket(loop: loop, host: host, port: port)
        socket.onInput = { [unowned self] bytes in
            input.append(contentsOf: bytes)
            parseReplies()
        }
    }

    /// Queues one command (an array of bulk strings).
    func send(_ words: [String]) {
        guard !closed else { return }
        socket.queue("*\(words.count)\r\n".utf8)
        for word in words {
            socket.queue("$\(word.utf8.count)\r\n".utf8)
            socket.queue(word.utf8)
            socket.queue([13, 10])
        }
        socket.flushAtEndOfPass()
    }

    /// Closes the socket now; no callbacks follow.
    func close() {
        onReply = nil
        socket.close()
    }

    private func fail(_ reason: String) { socket.fail(reason) }

    // MARK: RESP parsing

    private func parseReplies() {
        while !closed, let (elements, end) = parseReply(at: inputOffset) {
            inputOffset = end
            onReply?(elements)
        }
        if inputOffset == input.count {
            input.removeAll(keepingCapacity: true)
            inputOffset = 0
        } else if inputOffset > 64 * 1024 {
            input.removeFirst(inputOffset)
            inputOffset = 0
        }
        if input.count > Self.maxBufferedInput { fail("reply too large") }
    }

    /// One complete top-level reply starting at `start`, or nil if more bytes are needed.
    private func parseReply(at start: Int) -> ([ArraySlice<UInt8>], Int)? {
        guard start < input.count else { return nil }
        guard input[start] == UInt8(ascii: "*") else {
            guard let (value, end) = parseElement(at: start) else { return nil }
            return ([value], end)
        }
        guard let (line, afterHeader) = parseLine(at: start + 1), let count = Self.integer(line) else { return nil }
        var elements: [ArraySlice<UInt8>] = []
        var position = afterHeader
        for _ in 0..<max(0, count) {
            guard let (value, end) = parseElement(at: position) else { return nil }
            elements.append(value)
            position = end
        }
        return (elements, position)
    }

    /// A bulk string's bytes or a simple value's line (`+`, `-` prefixed with its type byte, `:`).
    private func parseElement(at start: Int) -> (ArraySlice<UInt8>, Int)? {
        guard start < input.count else { return nil }
        let type = input[start]
        guard let (line, afterLine) = parseLine(at: start + 1) else { return nil }
        guard type == UInt8(ascii: "$") else {
            return (type == UInt8(ascii: "-") ? input[start..<(afterLine - 2)] : line, afterLine)
        }
        guard let length = Self.integer(line) else { return nil }
        if length < 0 { return (input[afterLine..<afterLine], afterLine) }
        let end = afterLine + length + 2
        guard end <= input.count else { return nil }
        return (input[afterLine..<(afterLine + length)], end)
    }

    /// The bytes up to the next CRLF and the index after it.
    private func parseLine(at start: Int) -> (ArraySlice<UInt8>, Int)? {
        var i = start
        while i + 1 < input.count {
            if input[i] == 13 && input[i + 1] == 10 { return (input[start..<i], i + 2) }
            i += 1
        }
        return nil
    }

    private static func integer(_ bytes: ArraySlice<UInt8>) -> Int? {
        var value = 0
        var negative = false
        for (offset, byte) in zip(0..., bytes) {
            if offset == 0 && byte == UInt8(ascii: "-") {
                negative = true
                continue
            }
            guard byte >= 0x30, byte <= 0x39, value < 1 << 40 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return negative ? -value : value
    }
}
