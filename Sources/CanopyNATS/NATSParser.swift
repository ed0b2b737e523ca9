// NATSParser -- the server side of the NATS core protocol, from bytes to operations, incremental and bounded.
//
// What a server sends (docs.nats.io, "Client Protocol"): control lines ended by CRLF, operation names in any case,
// arguments separated by spaces or tabs:
//
//   INFO {json}                                      PING | PONG | +OK | -ERR '<message>'
//   MSG <subject> <sid> [reply-to] <#bytes>\r\n<payload>\r\n
//   HMSG <subject> <sid> [reply-to] <#header bytes> <#total bytes>\r\n<headers><payload>\r\n
//
// Everything is bounded before it is buffered: a control line may be at most `maxControlLine` bytes, a message's
// total size at most `maxPayload` (the client sets it from the server's own `max_payload`), so a server that
// misbehaves costs at most one line plus one message of memory. Anything else — a bare LF, an unknown operation,
// a size that is not a decimal number, a header block larger than its message, a payload not followed by CRLF —
// is a `NATSProtocolError`, after which the parser yields nothing more (the connection must be dropped).
//
// A pure value: bytes in (`append`), operations out (`next`), no I/O, so it is tested and fuzzed alone.

import CanopyCore

/// The limits of a ``NATSParser``.
public struct NATSParserLimits: Sendable, Equatable {
    /// The longest control line accepted, CRLF included (INFO with a cluster's `connect_urls` is the longest).
    public var maxControlLine: Int
    /// The largest message accepted, headers included.
    public var maxPayload: Int

    public init(maxControlLine: Int = 64 << 10, maxPayload: Int = 8 << 20) {
        self.maxControlLine = maxControlLine
        self.maxPayload = maxPayload
    }
}

/// Parses what a NATS server sends into ``NATSServerOperation``s.
public struct NATSParser: Sendable {
    public var limits: NATSParserLimits
    private var buffer: [UInt8] = []
    private var position = 0
    /// Where the search for the current control line's LF resumes, so a line arriving byte by byte is scanned once.
    private var scanned = 0
    private var pendingMessage: PendingMessage?
    private var failure: NATSProtocolError?

    private struct PendingMessage: Sendable {
        var subject: String
        var sid: UInt64
        var replyTo: String?
        var headerBytes: Int?
        var totalBytes: Int
    }

    public init(limits: NATSParserLimits = .init()) {
        self.limits = limits
    }

    /// Bytes not yet consumed by an operation.
    public var bufferedBytes: Int { buffer.count - position }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard failure == nil else { return }
        if position > 0 && position >= buffer.count / 2 {
            buffer.removeFirst(position)
            scanned -= position
            position = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete operation, nil when more bytes are needed.
    /// - Throws: the first protocol violation, again on every later call.
    public mutating func next() throws(NATSProtocolError) -> NATSServerOperation? {
        if let failure { throw failure }
        do {
            return try parseNext()
        } catch {
            failure = error
            buffer = []
            position = 0
            throw error
        }
    }

    private mutating func parseNext() throws(NATSProtocolError) -> NATSServerOperation? {
        if let pending = pendingMessage { return try payload(of: pending) }
        guard let lineEnd = try findLineEnd() else { return nil }
        let line = buffer[position..<lineEnd]  // without CRLF
        position = lineEnd + 2
        scanned = position
        return try operation(line)
    }

    /// The index of the CR of the current line's CRLF, nil if it has not arrived yet.
    private mutating func findLineEnd() throws(NATSProtocolError) -> Int? {
        var index = max(scanned, position)
        let limit = min(buffer.count, position + limits.maxControlLine)
        while index < limit {
            if buffer[index] == 0x0A {
                guard index > position, buffer[index - 1] == 0x0D else {
                    throw .badFraming("a control line ended by a bare LF")
                }
                return index - 1
            }
            index += 1
        }
        scanned = index
        if buffer.count - position >= limits.maxControlLine { throw .lineTooLong(limit: limits.maxControlLine) }
        return nil
    }

    private mutating func operation(_ line: ArraySlice<UInt8>) throws(NATSProtocolError) -> NATSServerOperation? {
        let nameEnd = line.firstIndex { $0 == 0x20 || $0 == 0x09 } ?? line.endIndex
        let name = String(decoding: line[line.startIndex..<nameEnd], as: UTF8.self).uppercased()
        let rest = line[nameEnd...]
        switch name {
        case "PING":
            guard isBlank(rest) else { throw .badArguments("PING takes none") }
            return .ping
        case "PONG":
            guard isBlank(rest) else { throw .badArguments("PONG takes none") }
            return .pong
        case "+OK":
            guard isBlank(rest) else { throw .badArguments("+OK takes none") }
            return .ok
        case "-ERR":
            var text = String(decoding: rest, as: UTF8.self).trimmingSpaces()
            if text.count >= 2, text.hasPrefix("'"), text.hasSuffix("'") { text = String(text.dropFirst().dropLast()) }
            return .error(text)
        case "INFO":
            let json: JSONValue
            do {
                json = try JSONValue.parse(rest, options: JSONParseOptions(maxDepth: 16, maxBytes: limits.maxControlLine))
            } catch {
                throw .badInfo(error.userMessage)
            }
            return .info(try NATSServerInfo(json: json))
        case "MSG", "HMSG":
            let arguments = rest.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
            let headers = name == "HMSG"
            let sizes = headers ? 2 : 1
            guard arguments.count == 2 + sizes || arguments.count == 3 + sizes else {
                throw .badArguments("\(name) has \(arguments.count) arguments")
            }
            let subject = try token(arguments[0], "subject")
            guard let sid = UInt64(String(decoding: arguments[1], as: UTF8.self)), isDigits(arguments[1]) else {
                throw .badArguments("sid is not a number")
            }
            let replyTo = arguments.count == 3 + sizes ? try token(arguments[2], "reply subject") : nil
            let total = try size(arguments[arguments.count - 1])
            var headerBytes: Int?
            if headers {
                let count = try size(arguments[arguments.count - 2])
                guard count <= total else { throw .badArguments("header size \(count) exceeds total size \(total)") }
                headerBytes = count
            }
            guard total <= limits.maxPayload else { throw .payloadTooLarge(size: total, limit: limits.maxPayload) }
            let pending = PendingMessage(
                subject: subject, sid: sid, replyTo: replyTo, headerBytes: headerBytes, totalBytes: total)
            pendingMessage = pending
            return try payload(of: pending)
        case "":
            throw .unknownOperation("")
        default:
            throw .unknownOperation(String(name.prefix(32)))
        }
    }

    private mutating func payload(of pending: PendingMessage) throws(NATSProtocolError) -> NATSServerOperation? {
        guard buffer.count - position >= pending.totalBytes + 2 else { return nil }
        let end = position + pending.totalBytes
        guard buffer[end] == 0x0D, buffer[end + 1] == 0x0A else {
            throw .badFraming("a payload not followed by CRLF (its size was wrong)")
        }
        var headers: NATSHeaders?
        var bodyStart = position
        if let headerBytes = pending.headerBytes {
            headers = try NATSHeaders.parse(buffer[position..<(position + headerBytes)])
            bodyStart = position + headerBytes
        }
        let message = NATSMessage(
            subject: pending.subject, sid: pending.sid, replyTo: pending.replyTo, headers: headers,
            payload: Array(buffer[bodyStart..<end]))
        position = end + 2
        scanned = position
        pendingMessage = nil
        return .message(message)
    }

    private func isBlank(_ bytes: ArraySlice<UInt8>) -> Bool { bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 } }
    private func isDigits(_ bytes: ArraySlice<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.count <= 19 && bytes.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    private func size(_ bytes: ArraySlice<UInt8>) throws(NATSProtocolError) -> Int {
        guard isDigits(bytes), let value = Int(String(decoding: bytes, as: UTF8.self)) else {
            throw .badArguments("size '\(String(decoding: bytes.prefix(24), as: UTF8.self))' is not a decimal number")
        }
        return value
    }

    private func token(_ bytes: ArraySlice<UInt8>, _ what: String) throws(NATSProtocolError) -> String {
        guard bytes.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else { throw .badArguments("\(what) has control bytes") }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var text = Substring(self)
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
