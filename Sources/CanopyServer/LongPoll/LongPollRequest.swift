// LongPollRequest -- what one `/.lp` request asks for, parsed strictly from its query parameters.
//
// The Firebase JS SDK's long-poll transport (Protocol.md#Long-polling) sends only GET requests whose query says
// everything:
// - `start=t&ser=<random>&cb=<n>&v=5[&ns=..][&ls=..]`: open a session. `cb` is the number the page appended to
//   its callback names (`pLPCommand<cb>`, `pRTLPCB<cb>`).
// - `id=<id>&pw=<pw>&ser=<n>[&seg<i>=<n>&ts<i>=<count>&d<i>=<data>]...`: a poll, carrying zero or more segments.
//   A client message is serialized, base64-encoded (web-safe alphabet `-_`, padding `.`), cut into segments
//   numbered consecutively across the session; `ts` is the number of segments of that message.
// - `dframe=t&id=..&pw=..`: the hidden page whose unloading tells the server the client left.
// - `disconn=t&id=..&pw=..`: the client left.
// `ser` only defeats caches; `v`, `ns`, `ls`, `p`, `ac` and `r` are ignored or read elsewhere.

/// A session's id and password, as the client echoes them on every request.
struct LongPollCredentials: Equatable {
    var id: String
    var password: String
}

/// One piece of a client message.
struct LongPollSegment: Equatable {
    /// Position in the session's segment sequence (0, 1, 2, ... across messages).
    var number: Int
    /// How many segments the message this one belongs to has.
    var total: Int
    /// Web-safe base64 text.
    var data: String
}

/// A parsed `/.lp` request.
enum LongPollRequest: Equatable {
    /// Open a session; `callbackID` is the page's callback suffix (digits), if it sent one.
    case start(callbackID: String?)
    /// Deliver `segments` (possibly none) and wait for server messages.
    case poll(LongPollCredentials, segments: [LongPollSegment])
    /// The disconnect-detector page.
    case disconnectFrame(LongPollCredentials)
    /// The client is gone.
    case disconnect(LongPollCredentials)

    /// Most query parameters a request may have.
    static let maxParameters = 256
    private static let maxIdentifierLength = 64
    private static let maxNumberDigits = 15

    /// Parses a request's decoded query parameters. Pure; the fuzzable entry point of the transport.
    static func parse(
        _ query: [(name: String, value: String)], limits: LongPollLimits
    ) throws(LongPollError) -> LongPollRequest {
        guard query.count <= maxParameters else { throw .badRequest("Too many query parameters.") }
        var params: [String: String] = [:]
        var segmentParts: [Int: (seg: String?, ts: String?, d: String?)] = [:]
        for (name, value) in query {
            if let (kind, index) = segmentParameter(name) {
                guard index < limits.maxSegmentsPerRequest else {
                    throw .badRequest("More than \(limits.maxSegmentsPerRequest) segments in one request.")
                }
                var part = segmentParts[index] ?? (nil, nil, nil)
                let duplicate: Bool
                switch kind {
                case .number:
                    duplicate = part.seg != nil
                    part.seg = value
                case .total:
                    duplicate = part.ts != nil
                    part.ts = value
                case .data:
                    duplicate = part.d != nil
                    part.d = value
                }
                guard !duplicate else { throw .badRequest("Repeated parameter '\(name)'.") }
                segmentParts[index] = part
            } else if params[name] == nil {
                params[name] = value
            }
        }
        if params["start"] == "t" {
            guard segmentParts.isEmpty else { throw .badRequest("A start request carries no segments.") }
            let callback = params["cb"]
            if let callback {
                guard !callback.isEmpty, callback.utf8.count <= maxNumberDigits,
                    callback.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
                else { throw .badRequest("Parameter 'cb' must be a number.") }
            }
            return .start(callbackID: callback)
        }
        let credentials = try self.credentials(params)
        if params["disconn"] == "t" { return .disconnect(credentials) }
        if params["dframe"] == "t" { return .disconnectFrame(credentials) }
        var segments: [LongPollSegment] = []
        segments.reserveCapacity(segmentParts.count)
        for index in 0..<segmentParts.count {
            guard let part = segmentParts[index], let seg = part.seg, let ts = part.ts, let d = part.d
            else {
                throw .badRequest("Segment \(index) is incomplete or missing.")
            }
            segments.append(try segment(seg, ts, d, index: index, limits: limits))
        }
        return .poll(credentials, segments: segments)
    }

    private enum SegmentParameter { case number, total, data }

    /// `seg<i>`, `ts<i>` or `d<i>` with `i` a short decimal index; nil for every other name.
    private static func segmentParameter(_ name: String) -> (SegmentParameter, Int)? {
        let kind: SegmentParameter
        let suffix: Substring
        if name.hasPrefix("seg") {
            (kind, suffix) = (.number, name.dropFirst(3))
        } else if name.hasPrefix("ts") {
            (kind, suffix) = (.total, name.dropFirst(2))
        } else if name.hasPrefix("d") {
            (kind, suffix) = (.data, name.dropFirst(1))
        } else {
            return nil
        }
        guard let index = decimal(suffix, maxDigits: 4) else { return nil }
        return (kind, index)
    }

    private static func credentials(_ params: [String: String]) throws(LongPollError)
        -> LongPollCredentials
    {
        guard let id = params["id"], let password = params["pw"] else {
            throw .badRequest("A long-poll request needs 'start=t', or 'id' and 'pw'.")
        }
        for (name, value) in [("id", id), ("pw", password)] {
            guard !value.isEmpty, value.utf8.count <= maxIdentifierLength,
                value.utf8.allSatisfy({
                    isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
                })
            else { throw .badRequest("Parameter '\(name)' is malformed.") }
        }
        return LongPollCredentials(id: id, password: password)
    }

    private static func segment(
        _ seg: String, _ ts: String, _ d: String, index: Int, limits: LongPollLimits
    ) throws(LongPollError) -> LongPollSegment {
        guard let number = decimal(Substring(seg), maxDigits: maxNumberDigits) else {
            throw .badRequest("Parameter 'seg\(index)' must be a non-negative integer.")
        }
        guard let total = decimal(Substring(ts), maxDigits: maxNumberDigits), total >= 1 else {
            throw .badRequest("Parameter 'ts\(index)' must be a positive integer.")
        }
        guard total <= limits.maxSegmentsPerMessage else {
            throw .limit("A message may have at most \(limits.maxSegmentsPerMessage) segments.")
        }
        guard !d.isEmpty, d.utf8.count <= limits.maxSegmentCharacters else {
            throw .badRequest(
                "Parameter 'd\(index)' is empty or longer than \(limits.maxSegmentCharacters).")
        }
        guard d.utf8.allSatisfy({ isBase64Symbol($0) }) else {
            throw .badRequest("Parameter 'd\(index)' is not web-safe base64.")
        }
        return LongPollSegment(number: number, total: total, data: d)
    }

    /// A plain decimal number (no sign, no leading `+`), at most `maxDigits` long.
    private static func decimal(_ text: Substring, maxDigits: Int) -> Int? {
        guard !text.isEmpty, text.utf8.count <= maxDigits else { return nil }
        var value = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    /// The web-safe base64 alphabet plus the SDK's padding character `.`.
    private static func isBase64Symbol(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: ".")
    }
}
