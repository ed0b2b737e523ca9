// NATSHeaders -- the header block of HPUB/HMSG: `NATS/1.0[ status[ description]]` then `Name: value` lines.

/// The headers of a message, and the status line a server may put on messages it makes itself
/// (503 no responders, 404 no messages, 408 request timeout, 100 idle heartbeat / flow control).
///
/// Names keep their case and order; lookups compare names exactly first, then ignoring ASCII case (servers
/// and clients of other languages canonicalize differently). A name may repeat.
public struct NATSHeaders: Sendable, Equatable {
    /// The status code of the status line, if it has one.
    public var status: Int?
    /// The text after the status code ("No Responders", "Idle Heartbeat" …), empty if none.
    public var statusDescription: String
    public private(set) var fields: [Field]

    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    public init(_ fields: [(String, String)] = [], status: Int? = nil, statusDescription: String = "") {
        self.fields = fields.map { Field(name: $0.0, value: $0.1) }
        self.status = status
        self.statusDescription = statusDescription
    }

    public var isEmpty: Bool { fields.isEmpty && status == nil }

    /// The first value of `name`.
    public subscript(name: String) -> String? {
        if let exact = fields.first(where: { $0.name == name }) { return exact.value }
        let lowered = name.lowercased()
        return fields.first { $0.name.lowercased() == lowered }?.value
    }

    /// Adds a value (keeps the others of the same name).
    public mutating func append(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every value of `name` with one.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { $0.name == name }
        fields.append(Field(name: name, value: value))
    }

    // MARK: Wire form

    /// The block as sent by HPUB: `NATS/1.0` (with the status, if set), the fields, an empty line.
    /// - Throws: ``NATSError/invalidArgument(_:)`` for a name with a colon, space or control character, or a
    ///   value with CR or LF (either would let a caller forge other headers or protocol lines).
    func encoded() throws(NATSError) -> [UInt8] {
        var out = Array("NATS/1.0".utf8)
        if let status {
            guard (100...999).contains(status), statusDescription.utf8.allSatisfy({ $0 >= 0x20 || $0 == 0x09 }) else {
                throw .invalidArgument("status \(status) '\(statusDescription)' cannot be written")
            }
            out += " \(status)".utf8
            if !statusDescription.isEmpty { out += " \(statusDescription)".utf8 }
        }
        out += [0x0D, 0x0A]
        for field in fields {
            guard !field.name.isEmpty,
                field.name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") })
            else { throw .invalidArgument("header name '\(field.name)' is not a token") }
            guard field.value.utf8.allSatisfy({ $0 >= 0x20 || $0 == 0x09 }), !field.value.hasPrefix(" "),
                !field.value.hasPrefix("\t")
            else {
                throw .invalidArgument("header '\(field.name)' has a line break or control character in its value")
            }
            out += field.name.utf8
            out += [UInt8(ascii: ":"), UInt8(ascii: " ")]
            out += field.value.utf8
            out += [0x0D, 0x0A]
        }
        out += [0x0D, 0x0A]
        return out
    }

    /// Parses a header block exactly as long as the HMSG said (it ends with the empty line).
    static func parse(_ bytes: ArraySlice<UInt8>) throws(NATSProtocolError) -> NATSHeaders {
        guard bytes.count >= 12, bytes.suffix(4).elementsEqual([0x0D, 0x0A, 0x0D, 0x0A]) else {
            throw .badHeaders("the block does not end with an empty line")
        }
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var index = bytes.startIndex
        let end = bytes.endIndex - 2  // the final empty line's CRLF
        while index < end {
            if bytes[index] == 0x0D {
                guard index + 1 < bytes.endIndex, bytes[index + 1] == 0x0A else {
                    throw .badHeaders("CR without LF")
                }
                lines.append(bytes[start..<index])
                index += 2
                start = index
            } else if bytes[index] == 0x0A {
                throw .badHeaders("bare LF")
            } else {
                index += 1
            }
        }
        guard let statusLine = lines.first else { throw .badHeaders("no version line") }
        let version = Array("NATS/1.0".utf8)
        guard statusLine.starts(with: version) else { throw .badHeaders("the version line is not NATS/1.0") }
        var headers = NATSHeaders()
        let rest = statusLine.dropFirst(version.count)
        if !rest.isEmpty {
            guard rest.first == 0x20 else { throw .badHeaders("malformed status line") }
            let text = String(decoding: rest.dropFirst(), as: UTF8.self)
            let codeText = text.prefix { $0 != " " }
            guard codeText.count == 3, codeText.allSatisfy({ $0.isASCII && $0.isNumber }), let status = Int(codeText),
                (100...999).contains(status), rest.allSatisfy({ $0 >= 0x20 || $0 == 0x09 })
            else {
                throw .badHeaders("status '\(codeText)' is not a three-digit code from 100 to 999")
            }
            headers.status = status
            headers.statusDescription = String(text.dropFirst(codeText.count).drop { $0 == " " })
        }
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
                throw .badHeaders("a line without 'Name:'")
            }
            let name = line[line.startIndex..<colon]
            guard name.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw .badHeaders("a malformed header name") }
            let value = line[(colon + 1)...].drop { $0 == 0x20 || $0 == 0x09 }
            guard value.allSatisfy({ $0 >= 0x20 || $0 == 0x09 }) else { throw .badHeaders("a control character in a value") }
            headers.append(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
        }
        return headers
    }
}
