// FanoutRedisTransport -- the fan-out benchmark's Redis side: SUBSCRIBE connections and one PUBLISH connection.

import CanopyNet

/// Subscribers `SUBSCRIBE room` (or `user:<i>`); the writer `PUBLISH`es the same payload the Canopy writer sends.
final class FanoutRedisTransport: FanoutTransport {
    private let loop: EventLoop
    private let host: String
    private let port: Int
    private var connections: [FanoutRESPConnection] = []
    private var writer: FanoutRESPConnection?

    init(loop: EventLoop, host: String, port: Int) {
        self.loop = loop
        self.host = host
        self.port = port
    }

    func openSubscriber(_ index: Int, round: FanoutRound) throws {
        let connection = try FanoutRESPConnection(loop: loop, host: host, port: port)
        connection.onFailure = { [unowned round] reason in round.fail("redis subscriber \(index): \(reason)") }
        connection.onReply = { [unowned round] elements in
            guard let kind = elements.first else { return }
            if kind.elementsEqual("message".utf8), elements.count == 3 {
                if let (seq, sentAt) = elements[2].withUnsafeBufferPointer({ FanoutPayload.scan($0) }) {
                    round.deliver(seq: seq, sentAt: sentAt)
                }
            } else if kind.elementsEqual("subscribe".utf8) {
                round.subscriberReady()
            } else if kind.first == UInt8(ascii: "-") {
                round.fail("redis subscriber \(index): \(String(decoding: kind, as: UTF8.self))")
            }
        }
        connection.send(["SUBSCRIBE", round.spread ? "user:\(index)" : "room"])
        connections.append(connection)
    }

    func openWriter(round: FanoutRound) throws {
        let connection = try FanoutRESPConnection(loop: loop, host: host, port: port)
        connection.onFailure = { [unowned round] reason in round.fail("redis publisher: \(reason)") }
        connection.onOpen = { [unowned round] in round.writerReady() }
        connection.onReply = { [unowned round] elements in
            if let reply = elements.first, reply.first == UInt8(ascii: "-") {
                round.fail("redis publisher: \(String(decoding: reply, as: UTF8.self))")
            }
        }
        connections.append(connection)
        writer = connection
    }

    func write(seq: Int, payload: String, subscriber: Int?) {
        writer?.send(["PUBLISH", subscriber.map { "user:\($0)" } ?? "room", payload])
    }

    func closeAll(then done: @escaping () -> Void) {
        for connection in connections { connection.close() }
        connections = []
        writer = nil
        loop.schedule(afterMilliseconds: 0, done)
    }
}
