// LoopTransport -- the Linux transport: CanopyNet's WebSocketClient on an event-loop thread owned by a Database.
//
// TLS is not available on this path: `https`/`wss` URLs fail to connect with a clear error (Canopy is served
// over plain HTTP behind a TLS proxy; the Apple transport does TLS).

#if !os(Linux)
    /// Only the Linux transport runs its own loop thread.
    final class LoopThread: Sendable {
        func stop(afterMilliseconds: Int64) {}
    }
#else
    import CanopyCore
    import CanopyNet
    import Foundation
    import Synchronization

    /// An event loop running on its own thread until `stop()`.
    final class LoopThread: Sendable {
        let loop: EventLoop

        init() throws(ClientError) {
            do {
                loop = try EventLoop()
            } catch {
                throw .storage(reason: "cannot create the network event loop")
            }
            let thread = Thread { [loop] in loop.run() }
            thread.name = "canopy.client.loop"
            thread.start()
        }

        /// Stops the loop after `afterMilliseconds`, long enough for a closing socket to finish its close
        /// handshake (WebSocketClient gives the server 2 s) so its file descriptor is closed, not leaked.
        func stop(afterMilliseconds delay: Int64) {
            loop.execute { [loop] in
                loop.schedule(afterMilliseconds: delay) { loop.stop() }
            }
        }

        /// A factory of WebSocket transports on this loop.
        var factory: TransportFactory {
            { [loop] endpoint, events in
                guard !endpoint.secure else {
                    throw ClientError.invalidURL(reason: "TLS (https/wss) is not supported by the Linux transport")
                }
                return LoopTransport(loop: loop, endpoint: endpoint, events: events)
            }
        }
    }

    /// One WebSocket connection attempt.
    final class LoopTransport: ClientTransport, @unchecked Sendable {
        // Invariant: `socket` and `isClosed` are read and written only on `loop`'s thread.
        private let loop: EventLoop
        private var socket: WebSocketClient?
        private var isClosed = false
        private let events: @Sendable (TransportEvent) -> Void

        init(loop: EventLoop, endpoint: Endpoint, events: @escaping @Sendable (TransportEvent) -> Void) {
            self.loop = loop
            self.events = events
            loop.execute { [self] in open(endpoint) }
        }

        private func open(_ endpoint: Endpoint) {
            guard !isClosed else { return }
            do {
                let client = try WebSocketClient(loop: loop, host: endpoint.host, port: endpoint.port, target: endpoint.target) {
                    [weak self] result in
                    guard let self, !self.isClosed else { return }
                    switch result {
                    case .success: self.events(.opened)
                    case .failure(let error):
                        self.isClosed = true
                        self.events(.closed(reason: error.userMessage))
                    }
                }
                client.onText = { [weak self] text in
                    guard let self, !self.isClosed else { return }
                    self.events(.text(text))
                }
                client.onClose = { [weak self] in
                    guard let self, !self.isClosed else { return }
                    self.isClosed = true
                    self.socket = nil
                    self.events(.closed(reason: "connection closed"))
                }
                socket = client
            } catch {
                isClosed = true
                events(.closed(reason: error.userMessage))
            }
        }

        func send(_ text: String) {
            loop.execute { [self] in socket?.send(text: text) }
        }

        func close() {
            loop.execute { [self] in
                isClosed = true
                socket?.close()
                socket = nil
            }
        }
    }
#endif
