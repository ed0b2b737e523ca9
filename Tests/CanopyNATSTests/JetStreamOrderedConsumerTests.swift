// JetStreamOrderedConsumerTests -- what the ordered consumer does with deliveries a real server only produces under
// failures (lost messages): a scripted server answers the consumer-create API and sends exactly the deliveries and
// heartbeats a test names.

import Foundation
import Testing

@testable import CanopyNATS

/// What the scripted server sends to a consumer's deliver subject.
enum ScriptedDelivery: Sendable {
    case message(consumer: UInt64, stream: UInt64)
    /// An idle heartbeat naming the last consumer and stream sequences the server sent.
    case heartbeat(lastConsumer: UInt64, lastStream: UInt64)
}

/// A loopback server speaking just enough of the NATS protocol and the JetStream API for one ordered consumer: it
/// answers each `CONSUMER.CREATE` with success, then sends `script(n)` (n counts the creates from 0) to the deliver
/// subject the request named.
final class ScriptedJetStreamServer: @unchecked Sendable {
    // safe: `port` and `listener` are set in init; `createRequests` is guarded by `lock`; the thread owns the sockets.
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var createRequests: [String] = []

    /// The payloads of the consumer-create requests received so far.
    var creates: [String] { lock.withLock { createRequests } }

    init(script: @escaping @Sendable (Int) -> [ScriptedDelivery]) throws {
        let (listener, port) = try loopbackListener()
        self.listener = listener
        self.port = port
        Thread.detachNewThread { [self] in
            let client = accept(listener, nil, nil)
            close(listener)
            guard client >= 0 else { return }
            serve(client, script: script)
            close(client)
        }
    }

    deinit { shutdown(listener, Int32(SHUT_RDWR)) }

    private func serve(_ client: Int32, script: (Int) -> [ScriptedDelivery]) {
        func send(_ bytes: [UInt8]) {
            _ = bytes.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        send(Array("INFO {\"server_id\":\"SCRIPT\",\"version\":\"2.9.10\",\"max_payload\":65536,\"headers\":true}\r\n".utf8))
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var sids: [String: String] = [:]  // subject -> sid
        /// The next CRLF-ended line, or nil when the client went away.
        func line() -> String? {
            while true {
                if let end = buffer.firstIndex(of: 10), end > 0, buffer[end - 1] == 13 {
                    let text = String(decoding: buffer[..<(end - 1)], as: UTF8.self)
                    buffer.removeFirst(end + 1)
                    return text
                }
                let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return nil }
                buffer += chunk[0..<count]
            }
        }
        func payload(_ size: Int) -> [UInt8]? {
            while buffer.count < size + 2 {
                let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return nil }
                buffer += chunk[0..<count]
            }
            defer { buffer.removeFirst(size + 2) }
            return Array(buffer[..<size])
        }
        func sid(for subject: String) -> String? {
            sids[subject] ?? sids.first { $0.key.hasSuffix(".*") && subject.hasPrefix(String($0.key.dropLast())) }?.value
        }
        var created = 0
        while let command = line() {
            let words = command.split(separator: " ").map(String.init)
            switch words.first?.uppercased() {
            case "PING": send(Array("PONG\r\n".utf8))
            case "SUB": sids[words[1]] = words.last
            case "PUB", "HPUB":
                guard let size = Int(words.last ?? ""), let body = payload(size) else { return }
                let text = String(decoding: body, as: UTF8.self)
                guard words[1].hasPrefix("$JS.API.CONSUMER.CREATE."), words.count >= 4,
                    let replySID = sid(for: words[2]),
                    let deliver = text.range(of: "\"deliver_subject\":\"").map({ text[$0.upperBound...] })?
                        .prefix(while: { $0 != "\"" }),
                    let deliverSID = sid(for: String(deliver))
                else { continue }
                lock.withLock { createRequests.append(text) }
                let answer = "{\"type\":\"io.nats.jetstream.api.v1.consumer_create_response\",\"name\":\"C\(created)\"}"
                send(Array("MSG \(words[2]) \(replySID) \(answer.utf8.count)\r\n\(answer)\r\n".utf8))
                for delivery in script(created) {
                    switch delivery {
                    case .message(let consumer, let stream):
                        let body = "m\(stream)"
                        let ack = "$JS.ACK.S.C\(created).1.\(stream).\(consumer).1700000000000000000.0"
                        send(Array("MSG \(deliver) \(deliverSID) \(ack) \(body.utf8.count)\r\n\(body)\r\n".utf8))
                    case .heartbeat(let lastConsumer, let lastStream):
                        let headers =
                            "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: \(lastConsumer)\r\n"
                            + "Nats-Last-Stream: \(lastStream)\r\n\r\n"
                        let size = headers.utf8.count
                        send(Array("HMSG \(deliver) \(deliverSID) \(size) \(size)\r\n\(headers)\r\n".utf8))
                    }
                }
                created += 1
            default: continue  // CONNECT, UNSUB
            }
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct JetStreamOrderedConsumerTests {
    /// Lost deliveries at the end of a burst leave no later message to reveal the gap; the next idle heartbeat's
    /// `Nats-Last-Consumer` does, and the consumer is replaced from the first stream sequence that did not arrive.
    @Test func aHeartbeatNamingUnseenDeliveriesReplacesTheConsumer() throws {
        let server = try ScriptedJetStreamServer { create in
            create == 0
                // Sent 1..3, the client got 1: the first heartbeat matches what arrived, the second does not.
                ? [.message(consumer: 1, stream: 1), .heartbeat(lastConsumer: 1, lastStream: 1),
                    .heartbeat(lastConsumer: 3, lastStream: 3)]
                : [.message(consumer: 1, stream: 2), .message(consumer: 2, stream: 3),
                    .heartbeat(lastConsumer: 2, lastStream: 3)]
        }
        var options = NATSOptions(servers: [NATSServerAddress(host: "127.0.0.1", port: server.port)])
        options.reconnect = false
        let connection = try NATSConnection(options: options)
        defer { connection.close() }
        // A long heartbeat interval: only the scripted heartbeats matter, never a silence.
        let reader = try JetStreamOrderedConsumer(
            JetStream(connection, timeout: .seconds(5)), stream: "S", heartbeat: .seconds(60))
        defer { reader.stop() }

        var read: [UInt64] = []
        while read.count < 3, let message = reader.next(timeout: .seconds(10)) { read.append(message.streamSequence) }
        #expect(read == [1, 2, 3], "reader: \(reader.recentEvents.joined(separator: "; "))")
        #expect(reader.next(timeout: .milliseconds(200)) == nil)
        #expect(reader.resetCount == 1)
        let creates = server.creates
        #expect(creates.count == 2)
        #expect(creates.last?.contains("\"opt_start_seq\":2") == true)
    }
}
