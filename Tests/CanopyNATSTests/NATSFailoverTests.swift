// NATSFailoverTests -- `kill -9` of the server a client is connected to: the client moves to another server it
// learned from INFO, the R3 stream keeps accepting (2 of 3 nodes), fencing still holds, and an ordered reader
// misses and repeats nothing.

import CanopyTestSupport
import Foundation
import Testing

@testable import CanopyNATS

@Suite(.timeLimit(.minutes(1))) struct NATSFailoverTests {
    @Test func aClientFailsOverAndR3PublishesContinueWithTwoOfThreeNodes() throws {
        let cluster = try startCluster(count: 3)
        // Configured with n1 only: the other two come from INFO's connect_urls.
        let connection = try connect(cluster, nodes: [0]) { $0.reconnectWait = .milliseconds(20) }
        defer { connection.close() }
        let js = JetStream(connection, timeout: .seconds(2))
        var config = JetStreamStreamConfig(name: "CANOPY_LOG", subjects: ["canopy.ns.>"], replicas: 3)
        config.allowDirect = true
        _ = try untilAvailable { try js.createStream(config) }
        let deadline = Date().addingTimeInterval(10)
        while connection.knownServers.count < 3 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(Set(connection.knownServers.map(\.port)) == Set(cluster.nodes.map(\.clientPort)))

        var last: UInt64 = 0
        for index in 1...20 {
            let ack = try untilAvailable {
                try js.publish(ns("chat"), payload: Array("batch-\(index)".utf8),
                    options: .init(messageID: "chat-\(index)", expectedLastSubjectSequence: last))
            }
            last = ack.sequence
        }
        #expect(last == 20)
        let reader = try JetStreamOrderedConsumer(js, stream: "CANOPY_LOG", filterSubject: ns("chat"), start: .all,
            heartbeat: .milliseconds(500))
        defer { reader.stop() }
        var read: [UInt64] = []
        while read.count < 10, let message = reader.next(timeout: .seconds(5)) { read.append(message.streamSequence) }

        #expect(connection.connectedServer?.port == cluster.nodes[0].clientPort)
        cluster.kill(0)

        // Each publish is retried with its message id until the cluster answers: stored once, in order.
        for index in 21...40 {
            let ack = try untilAvailable {
                try js.publish(ns("chat"), payload: Array("batch-\(index)".utf8),
                    options: .init(messageID: "chat-\(index)", expectedLastSubjectSequence: last))
            }
            #expect(ack.sequence == last + 1)
            last = ack.sequence
        }
        #expect(connection.reconnectCount >= 1)
        let now = try #require(connection.connectedServer)
        #expect(now.port != cluster.nodes[0].clientPort)
        #expect(throws: JetStreamError.self) {
            try js.publish(ns("chat"), payload: Array("stale".utf8), options: .init(expectedLastSubjectSequence: 20))
        }
        let info = try untilAvailable { try js.streamInfo("CANOPY_LOG") }
        #expect(info.lastSequence == 40 && info.leader != "n1")

        // The reader's consumer is re-created through the meta group: after n1 died that waits for a new metadata
        // leader, up to 12 s after the kill here (Cluster.md#Failures), so 10 s was not enough on a loaded machine.
        while read.count < 40, let message = reader.next(timeout: .seconds(30)) { read.append(message.streamSequence) }
        #expect(read == Array(1...40), "reader: \(reader.recentEvents.joined(separator: "; "))")
        #expect(reader.next(timeout: .milliseconds(300)) == nil)
        // The consumer was replaced after the reconnect (counted once its creation has returned).
        let replaced = Date().addingTimeInterval(10)
        while reader.resetCount < 1 && Date() < replaced { Thread.sleep(forTimeInterval: 0.05) }
        #expect(reader.resetCount >= 1)
    }
}

/// A blocking TCP listener on an ephemeral loopback port, for the scripted servers of these tests.
func loopbackListener() throws -> (fd: Int32, port: Int) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(listener, pointer, length) == 0 && listen(listener, 8) == 0
                && getsockname(listener, pointer, &length) == 0
        }
    }
    try #require(ok)
    return (listener, Int(UInt16(bigEndian: address.sin_port)))
}

/// A TCP listener on loopback that plays a misbehaving server: INFO, then (after the client's CONNECT and PING)
/// PONG and the given bytes.
final class BadServer: @unchecked Sendable {
    // safe: `fd` and `port` are set in init and only read afterwards; the thread owns the sockets and closes them.
    let fd: Int32
    let port: Int

    init(info: String, after: [UInt8]) throws {
        let (listener, port) = try loopbackListener()
        fd = listener
        self.port = port
        Thread.detachNewThread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else {
                    close(listener)  // here, not in deinit: the number must not be reused while this thread waits
                    return
                }
                _ = Array(info.utf8).withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                var seen: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !String(decoding: seen, as: UTF8.self).contains("PING\r\n") {
                    let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                    guard count > 0 else { break }
                    seen += buffer[0..<count]
                }
                let reply = Array("PONG\r\n".utf8) + after
                _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                // Hold the connection until the client drops it.
                while buffer.withUnsafeMutableBytes({ recv(client, $0.baseAddress, $0.count, 0) }) > 0 {}
                close(client)
            }
        }
    }

    deinit { shutdown(fd, Int32(SHUT_RDWR)) }  // wakes the accept, which then closes the socket
}

@Suite(.timeLimit(.minutes(1))) struct NATSMalformedServerTests {
    static let info = "INFO {\"server_id\":\"BAD\",\"version\":\"2.9.10\",\"max_payload\":1024,\"headers\":true}\r\n"

    static let cases: [(String, [UInt8], NATSProtocolError)] = [
        ("oversized MSG", Array("MSG a 1 999999999\r\n".utf8), .payloadTooLarge(size: 999_999_999, limit: 1024 + 65536)),
        ("unknown operation", Array("HELLO\r\n".utf8), .unknownOperation("HELLO")),
        ("endless line", [UInt8](repeating: 65, count: 70_000), .lineTooLong(limit: 65536)),
        ("bare LF", Array("PING\n".utf8), .badFraming("a control line ended by a bare LF")),
        ("wrong size", Array("MSG a 1 2\r\nhello\r\n".utf8), .badFraming("a payload not followed by CRLF (its size was wrong)")),
        ("bad headers", Array("HMSG a 1 6 6\r\nHTTP\r\n\r\n".utf8), .badHeaders("the block does not end with an empty line")),
    ]

    @Test(arguments: cases.indices)
    func malformedInputDropsTheConnectionWithItsReason(index: Int) throws {
        let (_, bytes, expected) = Self.cases[index]
        let server = try BadServer(info: Self.info, after: bytes)
        var options = NATSOptions(servers: [NATSServerAddress(host: "127.0.0.1", port: server.port)])
        options.reconnect = false
        let connection = try NATSConnection(options: options)
        defer { connection.close() }
        // The bad bytes follow the PONG of the handshake at once: the reader may have dropped the connection
        // before this subscribes (which then throws `closed`).
        let subscription = try? connection.subscribe("a")
        let deadline = Date().addingTimeInterval(10)
        while connection.connectionStatus != .closed && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(connection.connectionStatus == .closed)
        #expect(connection.lastError == .protocolViolation(expected))
        #expect(subscription?.next(timeout: .milliseconds(10)) == nil)
        #expect(throws: NATSError.closed) { try connection.publish("a", payload: []) }
    }

    @Test func aMalformedInfoFailsTheHandshake() throws {
        let server = try BadServer(info: "INFO [\"not an object\"]\r\n", after: [])
        var options = NATSOptions(servers: [NATSServerAddress(host: "127.0.0.1", port: server.port)])
        options.reconnect = false
        let error = #expect(throws: NATSError.self) { try NATSConnection(options: options) }
        #expect(error?.userMessage.contains("bad INFO: not a JSON object") == true)
    }

    @Test func aClientLeavesABadServerForAGoodOne() throws {
        let bad = try BadServer(info: Self.info, after: Array("HELLO\r\n".utf8))
        let good = try startCluster(count: 1)
        var options = NATSOptions(servers: [
            NATSServerAddress(host: "127.0.0.1", port: bad.port),
            NATSServerAddress(host: "127.0.0.1", port: good.nodes[0].clientPort),
        ])
        options.reconnectWait = .milliseconds(10)
        let connection = try NATSConnection(options: options)
        defer { connection.close() }
        let subscription = try connection.subscribe("a")
        let deadline = Date().addingTimeInterval(10)
        while connection.connectedServer?.port != good.nodes[0].clientPort && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(connection.connectedServer?.port == good.nodes[0].clientPort)
        try connection.publish("a", payload: Array("after".utf8))
        #expect(subscription.next(timeout: .seconds(5))?.text == "after")  // the subscription was renewed
    }
}
