// FanoutCanopyTransport -- the fan-out benchmark's Canopy side: Firebase wire-protocol clients over ws or wss.

import CanopyCore
import CanopyNet

/// Subscribers `gauth` with the admin credential and `q`-listen on `/room` (or `/users/<i>`); the writer sends `p`
/// of write `seq` to `/room/m<seq>` (or `/users/<i>/m<seq>`). Subscriber `i` connects to
/// `subscriberPorts[i % count]` (by default the writer's port), so listeners can be spread over several servers.
final class FanoutCanopyTransport: FanoutTransport {
    private let loop: EventLoop
    private let host: String
    private let port: Int
    private let subscriberPorts: [Int]
    private let namespace: String
    private let credential: String
    private let tls: TLSClientContext?
    private var clients: [WebSocketClient] = []
    private var writer: WebSocketClient?
    private var nextRequest = 2

    /// - Parameters:
    ///   - port: the writer's server (and the subscribers' when `subscriberPorts` is empty).
    ///   - subscriberPorts: the servers subscribers connect to, in turn.
    ///   - tls: speak `wss` verified against this context; nil for plain `ws`.
    init(
        loop: EventLoop, host: String, port: Int, subscriberPorts: [Int] = [], namespace: String, credential: String,
        tls: TLSClientContext? = nil
    ) {
        self.loop = loop
        self.tls = tls
        self.host = host
        self.port = port
        self.subscriberPorts = subscriberPorts.isEmpty ? [port] : subscriberPorts
        self.namespace = namespace
        self.credential = credential
    }

    private func connect(round: FanoutRound, role: String, port: Int) throws -> WebSocketClient {
        let client = try WebSocketClient(
            loop: loop, host: host, port: port, target: "/.ws?v=5&ns=\(percentEncode(namespace))", tls: tls
        ) { [unowned round] result in
            if case .failure(let error) = result { round.fail("\(role): \(error.userMessage)") }
        }
        client.onClose = { [unowned round] in round.fail("\(role): the server closed the connection") }
        let auth: JSONValue = ["cred": .string(credential)]
        client.send(text: #"{"t":"d","d":{"r":1,"a":"gauth","b":\#(auth.serialized())}}"#)
        clients.append(client)
        return client
    }

    func openSubscriber(_ index: Int, round: FanoutRound) throws {
        let client = try connect(
            round: round, role: "subscriber \(index)", port: subscriberPorts[index % subscriberPorts.count])
        let path = round.spread ? "/users/\(index)" : "/room"
        client.send(text: #"{"t":"d","d":{"r":2,"a":"q","b":{"p":"\#(path)","h":""}}}"#)
        client.onText = { [unowned round] text in
            if let (seq, sentAt) = FanoutPayload.scan(text) {
                round.deliver(seq: seq, sentAt: sentAt, subscriber: index)
                return
            }
            switch Self.reply(text) {
            case .none: return
            case .some((2, "ok")): round.subscriberReady()
            case .some((_, "ok")): return
            case .some((let r, let status)): round.fail("subscriber \(index): request \(r) failed: \(status)")
            }
        }
    }

    func openWriter(round: FanoutRound) throws {
        let client = try connect(round: round, role: "writer", port: port)
        client.onText = { [unowned round] text in
            guard let (r, status) = Self.reply(text) else { return }
            if status != "ok" {
                round.fail("writer: request \(r) failed: \(status)")
            } else if r == 1 {
                round.writerReady()
            }
        }
        writer = client
    }

    func write(seq: Int, payload: String, subscriber: Int?) {
        let r = nextRequest
        nextRequest += 1
        // A child per write, like Redis's one message per PUBLISH: every write stays a distinct event with its own
        // payload. (Same-path writes would be delivered one by one too: `everyWriteIsDeliveredEvenWithinOneCommit`.)
        let path = subscriber.map { "/users/\($0)/m\(seq)" } ?? "/room/m\(seq)"
        writer?.send(text: #"{"t":"d","d":{"r":\#(r),"a":"p","b":{"p":"\#(path)","d":\#(payload)}}}"#)
    }

    func closeAll(then done: @escaping () -> Void) {
        for client in clients {
            client.onClose = nil
            client.onText = nil
            client.close()
        }
        clients = []
        writer = nil
        // A closing client shuts its socket when the server echoes the close, or after 2 s at the latest.
        loop.schedule(afterMilliseconds: 2_100, done)
    }

    private static let replyHead = Array(#"{"t":"d","d":{"r":"#.utf8)
    private static let statusKey = Array(#""s":""#.utf8)

    /// The request number and status of a response envelope; nil for pushes and control messages.
    ///
    /// The daemon writes replies as `{"t":"d","d":{"r":<n>,"b":{"s":"<status>",…}}}`; that shape is scanned without
    /// building a JSON tree (the writer gets one reply per write), anything else is parsed.
    static func reply(_ text: String) -> (Int64, String)? {
        var text = text
        if let fast = text.withUTF8({ scanReply($0) }) { return fast }
        guard text.contains(#""r":"#), let json = try? JSONValue.parse(text),
            case .int(let r)? = json["d"]?["r"], let status = json["d"]?["b"]?["s"]?.stringValue
        else { return nil }
        return (r, status)
    }

    private static func scanReply(_ bytes: UnsafeBufferPointer<UInt8>) -> (Int64, String)? {
        guard bytes.count > replyHead.count, bytes.starts(with: replyHead) else { return nil }
        guard let (r, index) = FanoutPayload.decimal(in: bytes, from: replyHead.count), index < bytes.count,
            bytes[index] == UInt8(ascii: ",")
        else { return nil }
        let rest = UnsafeBufferPointer(rebasing: bytes[index...])
        guard let keyStart = rest.firstRange(of: statusKey)?.upperBound else { return nil }
        guard let end = rest[keyStart...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        let status = rest[keyStart..<end]
        guard !status.contains(UInt8(ascii: "\\")) else { return nil }
        return (Int64(r), String(decoding: status, as: UTF8.self))
    }
}
