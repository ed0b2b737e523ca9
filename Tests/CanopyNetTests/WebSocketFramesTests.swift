// WebSocketFramesTests -- frames encoded once: their bytes, and sending one value to several live connections.
import CanopyNet
import Foundation
import Testing

@Suite(.timeLimit(.minutes(1))) struct WebSocketFramesTests {
    @Test func framesAreTheEncodersBytesBackToBack() {
        let long = [UInt8](repeating: 0x61, count: 70_000)
        var frames = WebSocketFrames()
        #expect(frames.isEmpty)
        frames.appendText(Array("hi".utf8))
        frames.appendBinary([1, 2, 3])
        frames.appendText(long)
        var expected: [UInt8] = []
        WebSocketFrameEncoder.encode(.text, payload: Array("hi".utf8), into: &expected)
        WebSocketFrameEncoder.encode(.binary, payload: [1, 2, 3], into: &expected)
        WebSocketFrameEncoder.encode(.text, payload: long, into: &expected)
        #expect(frames.bytes == expected)
        #expect(frames.count == 3)
        #expect(!frames.isEmpty)
    }

    @Test func clientDecoderReadsEachMessageInOrder() throws {
        var frames = WebSocketFrames(texts: ["one", "två", ""])
        frames.append(WebSocketFrames(texts: ["four"]))
        #expect(frames.count == 4)
        var decoder = WebSocketDecoder(maxMessageBytes: 1024, expectsMaskedFrames: false)
        decoder.append(frames.bytes)
        var texts: [String] = []
        while let event = try decoder.next() {
            guard case .text(let text) = event else {
                Issue.record("unexpected event \(event)")
                break
            }
            texts.append(text)
        }
        #expect(texts == ["one", "två", "", "four"])
    }

    @Test func oneValueSentToSeveralConnectionsReachesEachAfterEarlierMessages() throws {
        let shared = WebSocketFrames(texts: ["shared-1", "shared-2"])
        // "go" makes every open connection receive its own text, then the shared frames, then its own text again.
        let sockets = SocketList()
        let server = try TestServer { request, responder in
            guard let socket = responder.upgradeToWebSocket(request) else { return }
            sockets.items.append(socket)
            socket.onText = { text in
                guard text == "go" else { return }
                for (index, each) in sockets.items.enumerated() {
                    each.send(text: "before-\(index)")
                    each.send(shared)
                    each.send(text: "after-\(index)")
                }
            }
        }
        defer { server.stop() }
        let clients = try (0..<3).map { _ in try TestClient(port: server.port) }
        for client in clients {
            try client.send(WebSocketConnectionTests.upgrade)
            #expect(try client.readResponse().status == 101)
        }
        #expect(eventually { server.onLoop { sockets.items.count } == 3 })
        try clients[0].send(clientFrame(.text, Array("go".utf8)))
        for (index, client) in clients.enumerated() {
            let payloads = try (0..<4).map { _ in String(decoding: try client.readFrame().payload, as: UTF8.self) }
            #expect(payloads == ["before-\(index)", "shared-1", "shared-2", "after-\(index)"])
        }
    }

    @Test func emptyFramesSendNothing() throws {
        let server = try TestServer { request, responder in
            guard let socket = responder.upgradeToWebSocket(request) else { return }
            socket.onText = { [unowned socket] text in
                socket.send(WebSocketFrames())
                socket.send(text: text)
            }
        }
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        try client.send(WebSocketConnectionTests.upgrade)
        #expect(try client.readResponse().status == 101)
        try client.send(clientFrame(.text, Array("echo".utf8)))
        #expect(try client.readFrame().payload == Array("echo".utf8))
    }
}

/// Connections collected on the server's loop (touched only there).
private final class SocketList: @unchecked Sendable {  // safe: only the test server's loop thread uses `items`
    var items: [WebSocketConnection] = []
}
