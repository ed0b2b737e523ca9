// RequestTarget -- splits a request target into path and query and percent-decodes them (RFC 3986).
//
// Decoding happens exactly once. `+` is a literal plus sign (Firebase treats it so), `%2F` decodes to `/`
// inside the decoded path (the raw path is kept for callers that need segment boundaries), and a decoded
// result must be valid UTF-8. Absolute-form targets (`http://host/p?q`) are reduced to their path and query;
// `*` is kept as is (OPTIONS); any other target must start with `/`.

/// The decoded parts of a request target.
struct RequestTarget: Equatable {
    var rawPath: String
    var path: String
    var query: [Parameter]

    struct Parameter: Equatable {
        var name: String
        var value: String
    }

    /// Parses `bytes` (already checked to be visible ASCII).
    static func parse(_ bytes: ArraySlice<UInt8>) throws(HTTPParseError) -> RequestTarget {
        if bytes.elementsEqual("*".utf8) {
            return RequestTarget(rawPath: "*", path: "*", query: [])
        }
        var rest = bytes
        if rest.first != UInt8(ascii: "/") {
            rest = try stripSchemeAndAuthority(rest)
        }
        let queryStart = rest.firstIndex(of: UInt8(ascii: "?"))
        let fragmentStart = rest.firstIndex(of: UInt8(ascii: "#"))
        let pathEnd = queryStart ?? fragmentStart ?? rest.endIndex
        let rawPath = rest[rest.startIndex..<pathEnd]
        guard let path = percentDecode(rawPath) else {
            throw .malformed(reason: "invalid percent-encoding in path")
        }
        var query: [Parameter] = []
        if let queryStart {
            let queryEnd = fragmentStart.map { max($0, queryStart + 1) } ?? rest.endIndex
            // Pieces between '&'s, empty ones skipped (a loop rather than `split`, which builds an array of them).
            var start = queryStart + 1
            while start < queryEnd {
                let end = rest[start..<queryEnd].firstIndex(of: UInt8(ascii: "&")) ?? queryEnd
                defer { start = end + 1 }
                guard end > start else { continue }
                let piece = rest[start..<end]
                let equals = piece.firstIndex(of: UInt8(ascii: "="))
                let name = piece[piece.startIndex..<(equals ?? piece.endIndex)]
                let value = equals.map { piece[($0 + 1)...] } ?? []
                guard let decodedName = percentDecode(name), let decodedValue = percentDecode(value) else {
                    throw .malformed(reason: "invalid percent-encoding in query")
                }
                query.append(Parameter(name: decodedName, value: decodedValue))
            }
        }
        return RequestTarget(rawPath: String(decoding: rawPath, as: UTF8.self), path: path, query: query)
    }

    /// Removes `scheme://authority` from an absolute-form target, leaving `/path?query` (or `/`).
    private static func stripSchemeAndAuthority(_ bytes: ArraySlice<UInt8>) throws(HTTPParseError) -> ArraySlice<
        UInt8
    > {
        let separator = Array("://".utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
            bytes[colon...].starts(with: separator),
            colon > bytes.startIndex,
            bytes[bytes.startIndex..<colon].allSatisfy({ isSchemeByte($0) })
        else {
            throw .malformed(reason: "request target must start with '/'")
        }
        let authorityStart = colon + separator.count
        let authorityEnd = bytes[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }
        guard let authorityEnd else { return ArraySlice("/".utf8) }
        if bytes[authorityEnd] == UInt8(ascii: "?") {
            return ArraySlice("/".utf8) + bytes[authorityEnd...]
        }
        return bytes[authorityEnd...]
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
            true
        default: false
        }
    }

    /// Decodes `%XX` escapes once. Returns nil for a truncated or non-hex escape or invalid UTF-8.
    static func percentDecode(_ bytes: ArraySlice<UInt8>) -> String? {
        guard bytes.contains(UInt8(ascii: "%")) else {
            // Visible ASCII (the parser checked every byte of the target) is valid UTF-8 as it is.
            if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
            return String(validating: bytes, as: UTF8.self)
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex,
                    let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
                else { return nil }
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(byte)
                index += 1
            }
        }
        return String(validating: decoded, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
