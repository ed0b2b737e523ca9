// FanoutRESPConnection -- a minimal non-blocking RESP2 client connection for the Redis side of the fan-out bench.

import CCanopyLinux
import CanopyNet

/// One TCP connection speaking RESP2 on an EventLoop: commands out (batched once per loop pass), replies in.
/// Loop-confined. Replies are handed over as their elements (an array's items, or the single value).
final class FanoutRESPConnection {
    private static let maxBufferedInput = 64 * 1024 * 1024

    private let loop: EventLoop
    private let fd: Int32
    private var connected = false
    private var closed = false
    private var output: [UInt8] = []
    private var outputOffset = 0
    private var isFlushQueued = false
    private var input: [UInt8] = []
    private var inputOffset = 0

    /// Called once the TCP connection is established.
    var onOpen: (() -> Void)?
    /// Called for each complete reply with its elements.
    var onReply: (([ArraySlice<UInt8>]) -> Void)?
    /// Called once when the connection fails or the server closes it.
    var onFailure: ((String) -> Void)?

    init(loop: EventLoop, host: String, port: Int) throws(NetError) {
        self.loop = loop
        fd = try Socket.connect(host: host, port: port)
        do {
            // The registration holds the connection strongly until close().
            try loop.register(fd: fd, readable: false, writable: true) { events in self.handle(events) }
        } catch {
            Socket.close(fd)
            throw error
        }
    }

    /// Queues one command (an array of bulk strings).
    func send(_ words: [String]) {
        guard !closed else { return }
        output.append(contentsOf: "*\(words.count)\r\n".utf8)
        for word in words {
            output.append(contentsOf: "$\(word.utf8.count)\r\n".utf8)
            output.append(contentsOf: word.utf8)
            output.append(contentsOf: [13, 10])
        }
        guard connected, !isFlushQueued else { return }
        isFlushQueued = true
        loop.enqueueFlush { [weak self] in
            guard let self else { return }
            self.isFlushQueued = false
            self.writeOutput()
        }
    }

    /// Closes the socket now; no callbacks follow.
    func close() {
        guard !closed else { return }
        closed = true
        onOpen = nil
        onReply = nil
        onFailure = nil
        loop.unregister(fd: fd)
        Socket.close(fd)
    }

    // MARK: Events

    private func handle(_ events: IOEvents) {
        guard !closed else { return }
        if !connected {
            guard events.isWritable || events.isHangup else { return }
            let error = Socket.pendingError(fd)
            guard error == 0 else { return fail("connect failed (errno \(error))") }
            connected = true
            let callback = onOpen
            onOpen = nil
            callback?()
            writeOutput()
            return
        }
        if events.isWritable { writeOutput() }
        if events.isReadable || events.isHangup { readOnce() }
    }

    private func readOnce() {
        switch Socket.read(fd, into: loop.readBuffer) {
        case .transferred(let count):
            input.append(contentsOf: UnsafeRawBufferPointer(rebasing: loop.readBuffer[0..<count]))
            parseReplies()
        case .wouldBlock:
            return
        case .endOfFile, .failed:
            fail("the server closed the connection")
        }
    }

    private func writeOutput() {
        guard connected, !closed else { return }
        while outputOffset < output.count {
            let result = output.withUnsafeBytes { raw in
                Socket.write(fd, UnsafeRawBufferPointer(rebasing: raw[outputOffset...]))
            }
            guard case .transferred(let count) = result else {
                if result != .wouldBlock { return fail("write failed") }
                break
            }
            outputOffset += count
        }
        let drained = outputOffset == output.count
        if drained {
            output.removeAll(keepingCapacity: true)
            outputOffset = 0
        }
        loop.setInterest(fd: fd, readable: true, writable: !drained)
    }

    private func fail(_ reason: String) {
        let callback = onFailure
        close()
        callback?(reason)
    }

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
