// NATSEncoder -- the client side of the core protocol: CONNECT, PUB, HPUB, SUB, UNSUB, PING, PONG as bytes.
//
// Every subject, reply subject and queue group is checked before it is written: a space or line break in one
// would end the control line early and let the rest be read as another operation.

import CanopyCore

enum NATSEncoder {
    static let crlf: [UInt8] = [0x0D, 0x0A]
    static let ping = Array("PING\r\n".utf8)
    static let pong = Array("PONG\r\n".utf8)

    /// `CONNECT {json}\r\n`.
    static func connect(_ options: JSONValue) -> [UInt8] {
        var out = Array("CONNECT ".utf8)
        options.write(into: &out)
        return out + crlf
    }

    /// `PUB` or, with headers, `HPUB`, payload included.
    static func publish(
        subject: String, replyTo: String?, headers: NATSHeaders?, payload: some Collection<UInt8>
    ) throws(NATSError) -> [UInt8] {
        try checkSubject(subject, wildcards: false)
        if let replyTo { try checkSubject(replyTo, wildcards: false) }
        var out: [UInt8] = []
        out.reserveCapacity(subject.utf8.count + payload.count + 64)
        let reply = replyTo.map { " " + $0 } ?? ""
        if let headers {
            let block = try headers.encoded()
            out += "HPUB \(subject)\(reply) \(block.count) \(block.count + payload.count)\r\n".utf8
            out += block
        } else {
            out += "PUB \(subject)\(reply) \(payload.count)\r\n".utf8
        }
        out += payload
        out += crlf
        return out
    }

    static func subscribe(subject: String, queue: String?, sid: UInt64) throws(NATSError) -> [UInt8] {
        try checkSubject(subject, wildcards: true)
        if let queue { try checkToken(queue, "queue group") }
        return Array("SUB \(subject)\(queue.map { " " + $0 } ?? "") \(sid)\r\n".utf8)
    }

    static func unsubscribe(sid: UInt64, max: Int?) -> [UInt8] {
        Array("UNSUB \(sid)\(max.map { " \($0)" } ?? "")\r\n".utf8)
    }

    /// A subject: dot-separated non-empty tokens of printable bytes without spaces; with `wildcards`, `*` may be a
    /// whole token and `>` the whole last token.
    static func checkSubject(_ subject: String, wildcards: Bool) throws(NATSError) {
        guard !subject.isEmpty, subject.utf8.count <= 4096 else {
            throw .invalidArgument("subject '\(subject.prefix(64))' is empty or too long")
        }
        let tokens = subject.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        for (index, token) in tokens.enumerated() {
            guard !token.isEmpty else { throw .invalidArgument("subject '\(subject)' has an empty token") }
            guard token.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
                throw .invalidArgument("subject '\(subject.prefix(64))' has a space or control character")
            }
            let wildcard = token.elementsEqual([UInt8(ascii: "*")]) || token.elementsEqual([UInt8(ascii: ">")])
            if wildcard {
                guard wildcards else { throw .invalidArgument("subject '\(subject)' has a wildcard") }
                if token.first == UInt8(ascii: ">") && index != tokens.count - 1 {
                    throw .invalidArgument("'>' must be the last token of '\(subject)'")
                }
            }
        }
    }

    static func checkToken(_ token: String, _ what: String) throws(NATSError) {
        guard !token.isEmpty, token.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw .invalidArgument("\(what) '\(token.prefix(64))' is empty or has a space or control character")
        }
    }
}

extension NATSEncoder {
    /// The length of the control line at the start of `bytes`, CRLF included.
    static func lineLength(_ bytes: [UInt8]) -> Int {
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == 0x0D && bytes[index + 1] == 0x0A { return index + 2 }
            index += 1
        }
        return bytes.count
    }
}
