// WireTestClient -- a Firebase wire-protocol peer for tests: a real WebSocket on its own event loop thread.

import CanopyCore
import CanopyNet
import Foundation
import Synchronization
import Testing

/// Speaks raw protocol messages; collects everything the server sends.
final class WireTestClient: @unchecked Sendable {  // safe: `socket` is touched only on `loop`; `received` is a Mutex
    let loop: EventLoop
    private var socket: WebSocketClient?
    private let received = Mutex<[JSONValue]>([])
    private let closed = Atomic<Bool>(false)
    /// The close code the server sent (0 until it sent one).
    private let closeCode = Atomic<UInt16>(0)
    private let thread: Thread
    private var nextRequest: Int64 = 1

    init(port: Int, namespace: String, tls: TLSClientContext? = nil, host: String = "127.0.0.1") throws {
        let loop = try EventLoop()
        self.loop = loop
        thread = Thread { loop.run() }
        thread.start()
        let opened = DispatchSemaphore(value: 0)
        let failure = Mutex<String?>(nil)
        loop.execute { [self] in
            do {
                let client = try WebSocketClient(
                    loop: loop, host: host, port: port, target: "/.ws?v=5&ns=\(namespace)", tls: tls
                ) { result in
                    if case .failure(let error) = result { failure.withLock { $0 = error.userMessage } }
                    opened.signal()
                }
                client.onText = { [self] text in self.receive(text) }
                client.onClose = { [self, unowned client] in
                    closeCode.store(client.peerCloseCode ?? 0, ordering: .relaxed)
                    closed.store(true, ordering: .relaxed)
                }
                socket = client
            } catch {
                failure.withLock { $0 = "\(error)" }
                opened.signal()
            }
        }
        guard opened.wait(timeout: .now() + 10) == .success else { throw HTTPClientError("websocket open timed out") }
        if let message = failure.withLock({ $0 }) { throw HTTPClientError(message) }
    }

    deinit { loop.stop() }

    /// Pieces of a counted message being reassembled (loop thread only).
    private var pieces: (remaining: Int, text: String)?
    /// Largest frame the server sent, in UTF-16 units (the protocol caps pieces at 16384).
    let largestFrame = Mutex<Int>(0)

    private func receive(_ text: String) {
        largestFrame.withLock { $0 = max($0, text.utf16.count) }
        if var buffered = pieces {
            buffered.text += text
            buffered.remaining -= 1
            pieces = buffered.remaining > 0 ? buffered : nil
            if buffered.remaining == 0, let json = try? JSONValue.parse(buffered.text) {
                received.withLock { $0.append(json) }
            }
            return
        }
        if text.count <= 6, let count = Int(text), count > 0 {
            pieces = (count, "")
            return
        }
        if let json = try? JSONValue.parse(text) { received.withLock { $0.append(json) } }
    }

    var isClosed: Bool { closed.load(ordering: .relaxed) }

    /// The code of the server's close frame, once the connection is closed (nil before, or without one).
    var serverCloseCode: UInt16? {
        guard isClosed else { return nil }
        let code = closeCode.load(ordering: .relaxed)
        return code == 0 ? nil : code
    }

    /// Waits until the connection is closed; false on timeout.
    func waitUntilClosed(timeout: TimeInterval = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !isClosed && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        return isClosed
    }

    /// Sends a data request; returns its request number.
    @discardableResult
    func request(_ action: String, _ body: JSONValue) -> Int64 {
        let r = nextRequest
        nextRequest += 1
        sendRaw(JSONValue(["t": "d", "d": ["r": .int(r), "a": .string(action), "b": body]]).serialized())
        return r
    }

    func sendRaw(_ text: String) {
        loop.execute { [self] in socket?.send(text: text) }
    }

    func sendBinary(_ bytes: [UInt8]) {
        loop.execute { [self] in socket?.send(binary: bytes) }
    }

    func close() {
        loop.execute { [self] in socket?.close() }
    }

    /// Waits for the first message (after those already consumed) matching `predicate`.
    func waitFor(timeout: TimeInterval = 5, _ predicate: (JSONValue) -> Bool) -> JSONValue? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let found = received.withLock({ messages -> JSONValue? in
                guard let index = messages.firstIndex(where: predicate) else { return nil }
                return messages.remove(at: index)
            }) {
                return found
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return nil
    }

    /// The reply to request `r`.
    func reply(_ r: Int64) -> JSONValue? { waitFor { $0["d"]?["r"] == .int(r) } }

    /// The next push with action `action` (and path `path`, if given).
    func push(_ action: String, path: String? = nil, timeout: TimeInterval = 5) -> JSONValue? {
        waitFor(timeout: timeout) { m in m["d"]?["a"] == .string(action) && (path == nil || m["d"]?["b"]?["p"] == .string(path!)) }
    }

    /// Everything received and not yet consumed, in order, consuming it.
    func takeAll() -> [JSONValue] { received.withLock { messages in defer { messages = [] }; return messages } }

    /// Everything received so far, in order (for ordering checks), without consuming it.
    var all: [JSONValue] { received.withLock { $0 } }
}

extension JSONValue {
    init(_ value: JSONValue) { self = value }
}
