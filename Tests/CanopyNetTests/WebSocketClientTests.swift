// WebSocketClientTests -- the loop-based client against the server: handshake, echo, close both ways, failures.
import CanopyNet
import Foundation
import Synchronization
import Testing

/// What a client saw; written on the loop, read by the test.
final class ClientLog: Sendable {
    let events = Mutex<[String]>([])
    func add(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
}

/// Keeps a client reachable from the test thread (touched only on the loop).
final class ClientBox: @unchecked Sendable {  // safe: `client` is used only inside loop tasks
    var client: WebSocketClient?
}

@Suite(.timeLimit(.minutes(1))) struct WebSocketClientTests {
    static func connect(_ server: TestServer, target: String = "/.ws", log: ClientLog, box: ClientBox) {
        server.onLoop { [server] in
            do {
                let client = try WebSocketClient(
                    loop: server.loop, host: "127.0.0.1", port: server.port, target: target,
                    headers: [("User-Agent", "canopy-test")]
                ) { result in
                    switch result {
                    case .success: log.add("open")
                    case .failure(let error): log.add("failed \(error)")
                    }
                }
                client.onText = { log.add("text \($0)") }
                client.onReadEnd = { if log.all.last?.hasPrefix("text") == true { log.add("read end") } }
                client.onClose = { [unowned client] in log.add("closed \(client.peerCloseCode ?? 0)") }
                client.send(text: "queued before open")
                box.client = client
            } catch {
                log.add("throw \(error)")
            }
        }
    }

    @Test func clientEchoesAndClosesCleanly() throws {
        let serverClosed = Counter()
        let server = try WebSocketConnectionTests.makeServer(closed: serverClosed)
        defer { server.stop() }
        let log = ClientLog()
        let box = ClientBox()
        Self.connect(server, log: log, box: box)
        #expect(eventually { log.all == ["open", "text QUEUED BEFORE OPEN", "read end"] })
        server.onLoop { [box] in box.client?.send(text: "again") }
        #expect(eventually { log.all.suffix(2) == ["text AGAIN", "read end"] })
        server.onLoop { [box] in box.client?.close() }
        #expect(eventually { serverClosed.value == 1 })  // the server saw our close frame
        #expect(eventually { server.onLoop { [server] in server.server.connectionCount } == 0 })
        #expect(!log.all.contains { $0.hasPrefix("closed") })
    }

    @Test func framesWrittenTogetherEndOneRead() throws {
        let server = try WebSocketConnectionTests.makeServer(closed: Counter())
        defer { server.stop() }
        let log = ClientLog()
        let box = ClientBox()
        Self.connect(server, log: log, box: box)
        #expect(eventually { log.all.last == "read end" })
        server.onLoop { [box] in box.client?.send(text: "burst") }
        // The server wrote the three frames at once: they are handed over before the one end of that read.
        #expect(eventually { log.all.last == "read end" && log.all.contains("text B3") })
        #expect(Array(log.all.suffix(4)) == ["text B1", "text B2", "text B3", "read end"])
    }

    @Test func serverCloseReachesClientWithItsCode() throws {
        let server = try WebSocketConnectionTests.makeServer(closed: Counter())
        defer { server.stop() }
        let log = ClientLog()
        let box = ClientBox()
        Self.connect(server, log: log, box: box)
        #expect(eventually { log.all.contains("open") })
        server.onLoop { [box] in box.client?.send(text: "bye") }
        #expect(eventually { log.all.last == "closed 4000" })
    }

    @Test func nonUpgradeAnswerIsARejection() throws {
        let server = try WebSocketConnectionTests.makeServer(closed: Counter())
        defer { server.stop() }
        let log = ClientLog()
        Self.connect(server, target: "/plain", log: log, box: ClientBox())
        #expect(eventually { log.all == ["failed \(WebSocketClientError.rejected(status: 200))"] })
    }

    @Test func refusedConnectionFails() throws {
        let server = try WebSocketConnectionTests.makeServer(closed: Counter())
        defer { server.stop() }
        let log = ClientLog()
        server.onLoop { [server] in
            do {
                // Port 1 on loopback has no listener in the test environment.
                _ = try WebSocketClient(loop: server.loop, host: "127.0.0.1", port: 1, target: "/") { result in
                    if case .failure(let error) = result { log.add("\(error.code) \(error)") }
                }
            } catch {
                log.add("throw")
            }
        }
        #expect(eventually { log.all.count == 1 })
        #expect(log.all.first?.hasPrefix("websocket_client_failed") == true)
    }
}
