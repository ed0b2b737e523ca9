// LoopTransport -- the Linux transport: CanopyNet's WebSocketClient on an event-loop thread owned by a Database.
//
// `https`/`wss` speak TLS through CanopyNet's TLSSession (OpenSSL), verified against the system's CA store or
// `DatabaseOptions.tlsCAFile`; a refused certificate ends the attempt with OpenSSL's reason.

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
        /// The TLS settings of `https`/`wss` endpoints (nil: the database URL is plain).
        let tls: TLSClientContext?

        /// The client TLS context trusting `caFile`, or the system's CA store.
        static func tlsContext(caFile: String?) throws(ClientError) -> TLSClientContext {
            do throws(TLSError) {
                guard let caFile else { return try TLSClientContext.system.get() }
                return try TLSClientContext(caFile: caFile)
            } catch {
                throw .tls(reason: error.userMessage)
            }
        }

        init(tls: TLSClientContext? = nil) throws(ClientError) {
            self.tls = tls
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
            { [loop, tls] endpoint, events in
                guard !endpoint.secure || tls != nil else {
                    throw ClientError.tls(reason: "no TLS context for \(endpoint.host)")
                }
                return LoopTransport(loop: loop, endpoint: endpoint, tls: endpoint.secure ? tls : nil, events: events)
            }
        }
    }

    /// One WebSocket connection attempt.
    final class LoopTransport: ClientTransport, @unchecked Sendable {
        // Invariant: `socket` and `isClosed` are read and written only on `loop`'s thread.
        private let loop: EventLoop
        private var socket: WebSocketClient?
        private var isClosed = false
        /// The frames of the read in progress, handed on together at its end (loop thread only).
        private var batch: [String] = []
        private let events: @Sendable (TransportEvent) -> Void
        private let tls: TLSClientContext?

        init(
            loop: EventLoop, endpoint: Endpoint, tls: TLSClientContext?,
            events: @escaping @Sendable (TransportEvent) -> Void
        ) {
            self.loop = loop
            self.tls = tls
            self.events = events
            loop.execute { [self] in open(endpoint) }
        }

        private func open(_ endpoint: Endpoint) {
            guard !isClosed else { return }
            do {
                let client = try WebSocketClient(
                    loop: loop, host: endpoint.host, port: endpoint.port, target: endpoint.target, tls: tls
                ) {
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
                    self.batch.append(text)
                }
                client.onReadEnd = { [weak self] in self?.endBatch() }
                client.onClose = { [weak self] in
                    guard let self, !self.isClosed else { return }
                    self.endBatch()
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

        private func endBatch() {
            guard !batch.isEmpty else { return }
            let frames = batch
            batch = []
            if !isClosed { events(frames.count == 1 ? .text(frames[0]) : .texts(frames)) }
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
