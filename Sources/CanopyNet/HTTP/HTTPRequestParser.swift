// HTTPRequestParser -- a pure, incremental HTTP/1.1 request parser: bytes in, requests or a typed error out.
//
// Grammar enforced (RFC 9112):
//   request-line = method SP request-target SP HTTP-version CRLF   (exactly one SP between parts; empty lines
//                  before it are skipped, as the RFC allows)
//   field-line   = field-name ":" OWS field-value OWS CRLF          (no whitespace before ':', no obs-fold)
//   body         = Content-Length (exactly one field, digits only)
//                | Transfer-Encoding: chunked (HTTP/1.1 only, the only coding) | none
//   chunked-body = *( chunk-size [ chunk-ext ] CRLF chunk-data CRLF ) "0" [ chunk-ext ] CRLF trailers CRLF
// Every line ends in CRLF; a bare LF is an error, and a bare CR is rejected as a control character.
// Both Content-Length and Transfer-Encoding, duplicate Content-Length fields, and non-digit lengths → 400.
// Limits: request line plus fields ≤ `maxHeaderBytes` bytes and ≤ `maxHeaderCount` fields (431); trailers
// count against the same budgets; the body ≤ `maxBodyBytes` (413, known from Content-Length before any body
// byte arrives); chunk-size lines ≤ 1 KiB. Cost is linear: line scanning resumes where it stopped, and
// consumed input is compacted away only once it is at least half of the buffer.
// After an error the parser is dead: every later call rethrows the same error.
// A parser made with `reportsHeads` also reports each head that a body follows (`.head`, in place of
// `.continueExpected`), so its owner can refuse the request before the body arrives and have the rest of that
// body read and dropped (`discardBody()`) instead of buffered.

/// Size limits applied while parsing.
public struct HTTPParserLimits: Sendable, Equatable {
    /// Request line plus header fields (and, separately, trailers), in bytes.
    public var maxHeaderBytes: Int
    /// Number of header fields (and, separately, trailer fields).
    public var maxHeaderCount: Int
    /// De-chunked body size in bytes.
    public var maxBodyBytes: Int

    /// Creates limits; the defaults are 16 KiB of head, 100 fields and 256 MiB of body.
    public init(maxHeaderBytes: Int = 16 * 1024, maxHeaderCount: Int = 100, maxBodyBytes: Int = 256 * 1024 * 1024) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
    }
}

/// What the parser produced from the bytes so far.
public enum HTTPParserEvent: Sendable {
    /// The head asks `Expect: 100-continue` and a body follows: the server should send `100 Continue`.
    case continueExpected
    /// Only with `reportsHeads`: a head whose body follows (its `body` is empty); `expectsContinue` when it asks
    /// `Expect: 100-continue`; `bodyLength` is its `Content-Length` (nil for a chunked body). The complete
    /// request follows as `.request` once its body has arrived.
    case head(HTTPRequest, bodyLength: Int?, expectsContinue: Bool)
    /// A complete request.
    case request(HTTPRequest)
}

/// Where the parser is within the current request, for timeouts.
public enum HTTPParserPhase: Sendable, Equatable {
    /// Between requests, nothing buffered.
    case idle
    /// Some of a request line or header section has arrived.
    case head
    /// The head is complete; body bytes (or trailers) are awaited.
    case body
}

/// An incremental HTTP/1.1 request parser. Feed bytes with ``append(_:)`` and pull events with ``next()``.
///
/// ```swift
/// var parser = HTTPRequestParser(limits: .init())
/// parser.append(bytes)
/// while let event = try parser.next() { ... }   // nil: more bytes needed
/// ```
public struct HTTPRequestParser: Sendable {
    private static let maxChunkLineBytes = 1024
    private static let compactionThreshold = 4096

    private enum State: Sendable, Equatable {
        case requestLine, headers
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
    }

    public let limits: HTTPParserLimits
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Line scanning resumes here, so a head arriving byte by byte is scanned once.
    private var scanIndex = 0
    private var state = State.requestLine
    private var headBytes = 0
    private var fieldCount = 0
    private var current: HTTPRequest?
    private var failure: HTTPParseError?
    /// Whether heads that a body follows are reported (`.head`).
    public let reportsHeads: Bool
    /// The current body is read and dropped, not kept (its request was already answered).
    private var isDiscardingBody = false
    /// Chunk bytes dropped so far while discarding (they still count against `maxBodyBytes`).
    private var discardedChunkBytes = 0

    /// Creates a parser enforcing `limits`; with `reportsHeads`, heads that a body follows are reported too.
    public init(limits: HTTPParserLimits = .init(), reportsHeads: Bool = false) {
        self.limits = limits
        self.reportsHeads = reportsHeads
    }

    /// The body bytes of the current request kept so far (0 between requests and while discarding).
    public var currentBodyByteCount: Int { current?.body.count ?? 0 }

    /// The rest of the current request's body is read and dropped instead of kept; its `.request` still
    /// follows (with an empty body), so the connection stays in step with the client.
    public mutating func discardBody() {
        guard current != nil else { return }
        isDiscardingBody = true
        current?.body = []
    }

    /// Bytes received but not yet consumed.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// The parser's position within the current request.
    public var phase: HTTPParserPhase {
        switch state {
        case .requestLine: bufferedByteCount == 0 && headBytes == 0 ? .idle : .head
        case .headers: .head
        default: .body
        }
    }

    /// Appends received bytes. Ignored once the parser has failed.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        guard failure == nil, !bytes.isEmpty else { return }
        if readIndex > 0
            && (readIndex == buffer.count || (readIndex >= Self.compactionThreshold && readIndex * 2 >= buffer.count))
        {
            buffer.removeSubrange(0..<readIndex)
            scanIndex -= readIndex
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Removes and returns the unconsumed bytes (after a protocol upgrade they belong to the new protocol).
    public mutating func takeRemainingBytes() -> [UInt8] {
        let rest = Array(buffer[readIndex...])
        buffer.removeAll()
        readIndex = 0
        scanIndex = 0
        return rest
    }

    /// Parses as far as the buffered bytes allow.
    /// - Returns: the next event, or nil when more bytes are needed.
    /// - Throws: ``HTTPParseError``; the parser then stays failed.
    public mutating func next() throws(HTTPParseError) -> HTTPParserEvent? {
        if let failure { throw failure }
        do {
            defer { releaseConsumedStorage() }
            return try step()
        } catch {
            failure = error
            throw error
        }
    }

    /// Parses a whole byte string; a pure entry point for fuzzing and tests.
    /// - Returns: the events in order, and the error that stopped parsing, if any.
    public static func parseAll(_ bytes: [UInt8], limits: HTTPParserLimits = .init()) -> (
        events: [HTTPParserEvent], error: HTTPParseError?
    ) {
        var parser = HTTPRequestParser(limits: limits)
        parser.append(bytes)
        return collectEvents { () throws(HTTPParseError) in try parser.next() }
    }

    /// Drops a fully consumed buffer, so an idle keep-alive connection does not hold on to the capacity
    /// of its largest read.
    private mutating func releaseConsumedStorage() {
        guard readIndex > 0, readIndex == buffer.count else { return }
        buffer.removeAll(keepingCapacity: buffer.capacity <= Self.compactionThreshold)
        readIndex = 0
        scanIndex = 0
    }

    // MARK: State machine

    private mutating func step() throws(HTTPParseError) -> HTTPParserEvent? {
        while true {
            switch state {
            case .requestLine:
                guard let line = try nextLine(limit: limits.maxHeaderBytes - headBytes, tooLong: .headersTooLarge)
                else { return nil }
                headBytes += line.count + 2
                if line.isEmpty { continue }
                current = try Self.parseRequestLine(line)
                state = .headers
            case .headers:
                guard let line = try nextLine(limit: limits.maxHeaderBytes - headBytes, tooLong: .headersTooLarge)
                else { return nil }
                headBytes += line.count + 2
                if line.isEmpty {
                    if let event = try finishHead() { return event }
                    continue
                }
                let field = try parseField(line)
                current?.headers.add(name: field.name, value: field.value)
            case .fixedBody(let remaining):
                let count = min(remaining, bufferedByteCount)
                guard count > 0 else { return nil }
                if !isDiscardingBody {
                    // The length is known: one allocation of the right size, not a doubling series of copies.
                    if current?.body.isEmpty == true { current?.body.reserveCapacity(remaining) }
                    current?.body.append(contentsOf: buffer[readIndex..<(readIndex + count)])
                }
                readIndex += count
                if count == remaining { return .request(finishRequest()) }
                state = .fixedBody(remaining: remaining - count)
                return nil
            case .chunkSize:
                guard
                    let line = try nextLine(
                        limit: Self.maxChunkLineBytes, tooLong: .malformed(reason: "chunk size line too long"))
                else { return nil }
                let size = try Self.parseChunkSize(line)
                if size == 0 {
                    state = .trailers
                    headBytes = 0
                    fieldCount = 0
                } else {
                    guard size <= limits.maxBodyBytes - (current?.body.count ?? 0) - discardedChunkBytes else {
                        throw .bodyTooLarge
                    }
                    state = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let count = min(remaining, bufferedByteCount)
                guard count > 0 else { return nil }
                if !isDiscardingBody { current?.body.append(contentsOf: buffer[readIndex..<(readIndex + count)]) }
                discardedChunkBytes += isDiscardingBody ? count : 0
                readIndex += count
                state = count == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - count)
            case .chunkDataEnd:
                guard bufferedByteCount >= 2 else { return nil }
                guard buffer[readIndex] == Self.cr, buffer[readIndex + 1] == Self.lf else {
                    throw .malformed(reason: "chunk data not followed by CRLF")
                }
                readIndex += 2
                scanIndex = readIndex
                state = .chunkSize
            case .trailers:
                guard let line = try nextLine(limit: limits.maxHeaderBytes - headBytes, tooLong: .headersTooLarge)
                else { return nil }
                headBytes += line.count + 2
                if line.isEmpty { return .request(finishRequest()) }
                _ = try parseField(line)  // trailers are validated and counted, then dropped
            }
        }
    }

    /// Decides the body framing once the head is complete.
    /// - Returns: an event to deliver now, or nil to keep parsing.
    private mutating func finishHead() throws(HTTPParseError) -> HTTPParserEvent? {
        guard var request = current else { preconditionFailure("head finished without a request line") }
        let headers = request.headers
        request.keepAlive =
            request.version == .http10
            ? headers.containsToken("keep-alive", in: "Connection")
            : !headers.containsToken("close", in: "Connection")
        current = request
        let lengths = headers.values("Content-Length")
        let codings = headers.values("Transfer-Encoding")
        if !codings.isEmpty {
            guard lengths.isEmpty else { throw .malformed(reason: "both Content-Length and Transfer-Encoding") }
            guard request.version != .http10 else { throw .malformed(reason: "Transfer-Encoding in HTTP/1.0") }
            guard codings.count == 1, HTTPHeaders.namesEqual(codings[0].trimmingSpacesAndTabs(), "chunked") else {
                throw .malformed(reason: "unsupported Transfer-Encoding")
            }
            state = .chunkSize
        } else if !lengths.isEmpty {
            guard lengths.count == 1, let length = Self.parseDecimal(lengths[0]) else {
                throw .malformed(reason: "invalid or repeated Content-Length")
            }
            guard length <= limits.maxBodyBytes else { throw .bodyTooLarge }
            guard length > 0 else { return .request(finishRequest()) }
            state = .fixedBody(remaining: length)
        } else {
            return .request(finishRequest())
        }
        let expectsContinue =
            request.version != .http10
            && headers.first("Expect").map { HTTPHeaders.namesEqual($0.trimmingSpacesAndTabs(), "100-continue") }
                == true
        if reportsHeads {
            var bodyLength: Int?
            if case .fixedBody(let length) = state { bodyLength = length }
            return .head(request, bodyLength: bodyLength, expectsContinue: expectsContinue)
        }
        return expectsContinue ? .continueExpected : nil
    }

    private mutating func finishRequest() -> HTTPRequest {
        guard let request = current else { preconditionFailure("request finished before it started") }
        current = nil
        state = .requestLine
        headBytes = 0
        fieldCount = 0
        isDiscardingBody = false
        discardedChunkBytes = 0
        return request
    }

    // MARK: Lines and fields

    private static let cr = UInt8(ascii: "\r")
    private static let lf = UInt8(ascii: "\n")

    /// The next CRLF-terminated line (without CRLF), or nil if incomplete.
    /// - Throws: `tooLong` when the line (with CRLF) exceeds `limit`; malformed for a bare LF.
    private mutating func nextLine(limit: Int, tooLong: HTTPParseError) throws(HTTPParseError) -> ArraySlice<UInt8>? {
        let start = max(scanIndex, readIndex)
        guard let newline = buffer[start...].firstIndex(of: Self.lf) else {
            scanIndex = buffer.count
            if buffer.count - readIndex > limit { throw tooLong }
            return nil
        }
        // The length first: a line too long is refused as such however its bytes arrived (before its end, the
        // check above has already refused it when more than `limit` bytes were buffered).
        guard newline + 1 - readIndex <= limit else { throw tooLong }
        guard newline > readIndex, buffer[newline - 1] == Self.cr else {
            throw .malformed(reason: "line not terminated by CRLF")
        }
        let line = buffer[readIndex..<(newline - 1)]
        readIndex = newline + 1
        scanIndex = readIndex
        return line
    }

    private static func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPRequest {
        let space = UInt8(ascii: " ")
        guard let firstSpace = line.firstIndex(of: space),
            let secondSpace = line[(firstSpace + 1)...].firstIndex(of: space)
        else { throw .malformed(reason: "request line must be 'METHOD target HTTP/1.1'") }
        let method = line[line.startIndex..<firstSpace]
        let target = line[(firstSpace + 1)..<secondSpace]
        let versionBytes = line[(secondSpace + 1)...]
        guard !method.isEmpty, method.allSatisfy(isTokenByte) else { throw .malformed(reason: "invalid method") }
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .malformed(reason: "invalid request target")
        }
        let version = try parseVersion(versionBytes)
        let parts = try RequestTarget.parse(target)
        let methodName = String(decoding: method.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self)
        return HTTPRequest(
            method: methodName, target: String(decoding: target, as: UTF8.self), path: parts.path,
            rawPath: parts.rawPath, query: parts.query.map { ($0.name, $0.value) }, headers: HTTPHeaders(),
            version: version)
    }

    private static func parseVersion(_ bytes: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPVersion {
        let start = bytes.startIndex
        guard bytes.count == 8, bytes.starts(with: "HTTP/".utf8), bytes[start + 6] == UInt8(ascii: "."),
            let major = digitValue(bytes[start + 5]), let minor = digitValue(bytes[start + 7])
        else { throw .malformed(reason: "invalid HTTP version") }
        guard major == 1 else { throw .versionNotSupported }
        // Higher 1.x minors are compatible with 1.1 (RFC 9110 §2.5).
        return minor == 0 ? .http10 : .http11
    }

    private mutating func parseField(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> (name: String, value: String)
    {
        guard let first = line.first, first != UInt8(ascii: " "), first != UInt8(ascii: "\t") else {
            throw .malformed(reason: "obsolete header line folding")
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            throw .malformed(reason: "header line without ':'")
        }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(Self.isTokenByte) else { throw .malformed(reason: "invalid header name") }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == 0x20 || byte == 0x09 { value = value.dropFirst() }
        while let byte = value.last, byte == 0x20 || byte == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            throw .malformed(reason: "invalid header value")
        }
        fieldCount += 1
        guard fieldCount <= limits.maxHeaderCount else { throw .headersTooLarge }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    private static func parseChunkSize(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> Int {
        var size = 0
        var digits = 0
        var index = line.startIndex
        while index < line.endIndex, let value = RequestTarget.hexValue(line[index]) {
            guard digits < 15 else { throw .bodyTooLarge }
            size = size << 4 | Int(value)
            digits += 1
            index += 1
        }
        guard digits > 0 else { throw .malformed(reason: "invalid chunk size") }
        let rest = line[index...]
        // chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ): accepted and ignored, but no control bytes.
        guard rest.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }),
            rest.first.map({ $0 == UInt8(ascii: ";") || $0 == 0x20 || $0 == 0x09 }) ?? true
        else { throw .malformed(reason: "invalid chunk extension") }
        return size
    }

    private static func parseDecimal(_ text: String) -> Int? {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= 18, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    private static func digitValue(_ byte: UInt8) -> Int? {
        byte >= 0x30 && byte <= 0x39 ? Int(byte - 0x30) : nil
    }

    /// RFC 9110 tchar: visible ASCII except delimiters.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
