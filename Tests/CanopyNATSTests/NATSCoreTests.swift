// NATSCoreTests -- the core protocol against one real `nats-server`: publish and subscribe, headers, queue
// groups, request/reply, no responders, max_payload, unsubscribe.

import CanopyTestSupport
import Foundation
import Testing

@testable import CanopyNATS

/// Starts servers or records why it cannot (the tests never skip silently).
func startCluster(count: Int, extraConfig: String = "") throws -> NATSTestCluster {
    do {
        return try NATSTestCluster(count: count, extraConfig: extraConfig)
    } catch {
        Issue.record("\(error)")
        throw error
    }
}

func connect(_ cluster: NATSTestCluster, nodes: [Int]? = nil, configure: (inout NATSOptions) -> Void = { _ in })
    throws -> NATSConnection
{
    let indices = nodes ?? Array(cluster.nodes.indices)
    var options = NATSOptions(servers: indices.map { NATSServerAddress(host: "127.0.0.1", port: cluster.nodes[$0].clientPort) })
    options.pingInterval = .milliseconds(500)
    configure(&options)
    return try NATSConnection(options: options)
}

@Suite(.timeLimit(.minutes(1))) struct NATSCoreTests {
    @Test func publishedMessagesReachSubscribersWithHeaders() throws {
        let server = try startCluster(count: 1)
        let publisher = try connect(server)
        let subscriber = try connect(server)
        defer {
            publisher.close()
            subscriber.close()
        }
        #expect(subscriber.serverInfo?.headers == true && subscriber.serverInfo?.version.hasPrefix("2.") == true)
        let all = try subscriber.subscribe("events.>")
        let one = try subscriber.subscribe("events.*.b")
        try subscriber.flush()

        try publisher.publish("events.a.b", payload: Array("first".utf8))
        var headers = NATSHeaders()
        headers.append("Canopy-Batch", "7")
        headers.append("Canopy-Batch", "8")
        try publisher.publish("events.a.c", payload: Array("second".utf8), headers: headers, replyTo: "answers.1")
        try publisher.publish("other", payload: Array("ignored".utf8))
        try publisher.flush()

        let first = try #require(all.next(timeout: .seconds(5)))
        #expect(first.subject == "events.a.b" && first.text == "first" && first.headers == nil && first.replyTo == nil)
        let second = try #require(all.next(timeout: .seconds(5)))
        #expect(second.subject == "events.a.c" && second.text == "second" && second.replyTo == "answers.1")
        #expect(second.headers?.fields.map(\.value) == ["7", "8"] && second.headers?["canopy-batch"] == "7")
        #expect(try #require(one.next(timeout: .seconds(5))).text == "first")
        #expect(one.next(timeout: .milliseconds(100)) == nil)

        one.unsubscribe()
        try publisher.publish("events.x.b", payload: Array("after".utf8))
        #expect(try #require(all.next(timeout: .seconds(5))).text == "after")
        #expect(one.next(timeout: .milliseconds(100)) == nil)
    }

    @Test func queueGroupsShareMessages() throws {
        let server = try startCluster(count: 1)
        let connection = try connect(server)
        defer { connection.close() }
        let a = try connection.subscribe("work", queue: "workers")
        let b = try connection.subscribe("work", queue: "workers")
        for index in 0..<20 { try connection.publish("work", payload: Array("\(index)".utf8)) }
        try connection.flush()
        var received: [String] = []
        for subscription in [a, b] {
            while let message = subscription.next(timeout: .milliseconds(100)) { received.append(message.text) }
        }
        #expect(received.count == 20 && Set(received).count == 20)
    }

    @Test func requestsGetTheirRepliesAndNoRespondersIsReported() throws {
        let server = try startCluster(count: 1)
        let service = try connect(server)
        let client = try connect(server)
        defer {
            service.close()
            client.close()
        }
        try service.subscribe("echo") { [service] message in
            guard let reply = message.replyTo else { return }
            var headers = NATSHeaders()
            headers.append("Echo-Of", message.subject)
            try? service.publish(reply, payload: Array(("echo: " + message.text).utf8), headers: headers)
        }
        try service.flush()
        for index in 0..<50 {
            let reply = try client.request("echo", payload: Array("\(index)".utf8), timeout: .seconds(5))
            #expect(reply.text == "echo: \(index)" && reply.headers?["Echo-Of"] == "echo")
        }
        #expect(throws: NATSError.noResponders(subject: "nobody.home")) {
            try client.request("nobody.home", payload: [], timeout: .seconds(5))
        }
        try client.subscribe("silent") { _ in }
        try client.flush()
        #expect(throws: NATSError.timeout(subject: "silent")) {
            try client.request("silent", payload: [], timeout: .milliseconds(200))
        }
    }

    @Test func maxPayloadIsRespected() throws {
        let server = try startCluster(count: 1, extraConfig: "max_payload: 1024")
        let connection = try connect(server)
        defer { connection.close() }
        #expect(connection.serverInfo?.maxPayload == 1024)
        let subscription = try connection.subscribe("big")
        #expect(throws: NATSError.payloadTooLarge(size: 1025, maximum: 1024)) {
            try connection.publish("big", payload: [UInt8](repeating: 65, count: 1025))
        }
        var headers = NATSHeaders()
        headers.append("K", "v")  // the header block counts: 10 + 6 + 2 bytes
        #expect(throws: NATSError.payloadTooLarge(size: 1024 + 18, maximum: 1024)) {
            try connection.publish("big", payload: [UInt8](repeating: 65, count: 1024), headers: headers)
        }
        try connection.publish("big", payload: [UInt8](repeating: 66, count: 1024))
        #expect(subscription.next(timeout: .seconds(5))?.payload.count == 1024)
        #expect(connection.connectionStatus == .connected)
    }

    @Test func closingFailsWaitersAndRefusesWork() throws {
        let server = try startCluster(count: 1)
        let connection = try connect(server)
        let subscription = try connection.subscribe("x")
        connection.close()
        #expect(connection.connectionStatus == .closed)
        #expect(subscription.next(timeout: .seconds(60)) == nil)  // at once: the subscription ended
        #expect(throws: NATSError.closed) { try connection.publish("x", payload: []) }
        #expect(throws: NATSError.closed) { try connection.request("x", payload: []) }
    }
}
