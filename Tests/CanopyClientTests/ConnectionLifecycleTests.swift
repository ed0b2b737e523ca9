// ConnectionLifecycleTests -- observable state, liveness, timeouts and token handling against a scripted server.

import CanopyCore
import Foundation
import Synchronization
import Testing

@testable import CanopyClient

/// Collects the values of an AsyncStream in the background.
final class StreamLog<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])

    init(_ stream: AsyncStream<Element>) {
        Task { [self] in
            for await item in stream { self.items.withLock { $0.append(item) } }
        }
    }

    var values: [Element] { items.withLock { $0 } }
}

@Suite struct ConnectionLifecycleTests {
    @Test func statesAndPendingCountsAreObservable() async throws {
        let network = ScriptedNetwork()
        let db = try scriptedDatabase(network)
        let states = StreamLog(db.connectionStates)
        let counts = StreamLog(db.pendingWriteCounts)
        #expect(await poll { counts.values == [0] })
        #expect(await poll { states.values.contains(.disconnected) })
        db.ref("a").setValue(1)
        db.ref("b").setValue(2)
        #expect(await poll { counts.values == [0, 1, 2] })
        network.accepting = true
        let connection = try #require(await network.connect(network.connections.count + 1))
        #expect(await poll { states.values.last == .connected })
        db.settle()
        connection.reply(1)
        connection.reply(2)
        #expect(await poll { counts.values == [0, 1, 2, 1, 0] })
        db.goOffline()
        #expect(await poll { states.values.last == .offline })
        #expect(connection.isClosed)
        await db.close()
        #expect(await poll { states.values.last == .closed })
    }

    @Test func aStreamKeepsItsDatabaseAlive() async throws {
        let network = ScriptedNetwork(accepting: true)
        let stream = try scriptedDatabase(network).ref(".info/connected").values
        var seen: [JSONValue] = []
        let connected = Task { _ = await network.connect(1) }
        for try await snapshot in stream {
            seen.append(snapshot.value)
            if snapshot.value == true { break }
        }
        await connected.value
        #expect(seen == [false, true])
    }

    @Test func aSilentConnectionIsPingedThenReplaced() async throws {
        let network = ScriptedNetwork(accepting: true)
        var options = scriptedOptions
        options.keepAliveInterval = 0.1
        let db = try scriptedDatabase(network, options: options)
        let first = try #require(await network.connect(1))
        #expect(await poll { first.frames.contains(#"{"t":"c","d":{"t":"p","d":{}}}"#) })
        // Nothing ever answers: after twice the interval the client gives up on it and reconnects.
        #expect(await poll { first.isClosed && network.connections.count >= 2 })
        await db.close()
    }

    @Test func aServerThatNeverHandshakesTimesOut() async throws {
        let network = ScriptedNetwork(accepting: true)
        var options = scriptedOptions
        options.connectTimeout = 0.1
        let db = try scriptedDatabase(network, options: options)
        #expect(await poll { network.connections.count >= 2 })
        #expect(network.connections[0].isClosed)
        await db.close()
    }

    @Test func refusedTokenIsRefreshedOnTheSameConnection() async throws {
        let network = ScriptedNetwork(accepting: true)
        var options = scriptedOptions
        options.tokenRefresher = { "fresh" }
        let db = try scriptedDatabase(network, token: "stale", options: options)
        let connection = try #require(await network.connect(1))
        db.settle()
        connection.replyTo("auth", "invalid_token", "bad token")
        #expect(await poll { connection.requests.filter { $0["a"] == "auth" }.count == 2 })
        #expect(connection.request("auth")?["b"]?["cred"] == "fresh")
        #expect(network.connections.count == 1)
        await db.setTokenAndWait(nil, connection)
        #expect(connection.actions.last == "unauth")
        await db.close()
    }
}

extension Database {
    /// `setToken`, answering the request it sends on `connection`.
    func setTokenAndWait(_ token: String?, _ connection: ScriptedConnection) async {
        async let done: Void = setToken(token)
        _ = await poll { connection.actions.last == (token == nil ? "unauth" : "auth") }
        connection.reply(connection.requests.last!["r"]!.int64Value!)
        await done
    }
}
