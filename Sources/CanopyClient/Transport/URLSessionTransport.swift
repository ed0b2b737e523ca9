// URLSessionTransport -- the Apple transport: URLSessionWebSocketTask (compiled only where Darwin exists).

#if canImport(Darwin)
    import Foundation
    import Synchronization

    /// One WebSocket connection through URLSession.
    final class URLSessionTransport: ClientTransport, Sendable {
        private let task: URLSessionWebSocketTask
        private let closed = Atomic<Bool>(false)
        private let events: @Sendable (TransportEvent) -> Void

        static let factory: TransportFactory = { endpoint, events in
            var components = URLComponents()
            components.scheme = endpoint.secure ? "wss" : "ws"
            components.host = endpoint.host
            components.port = endpoint.port
            guard let url = URL(string: endpoint.target, relativeTo: components.url) else {
                throw ClientError.invalidURL(reason: "cannot build the WebSocket URL")
            }
            return URLSessionTransport(url: url.absoluteURL, events: events)
        }

        init(url: URL, events: @escaping @Sendable (TransportEvent) -> Void) {
            self.events = events
            task = URLSession.shared.webSocketTask(with: url)
            task.resume()
            events(.opened)  // frames sent before the upgrade completes are queued by the task
            receive()
        }

        private func receive() {
            task.receive { [weak self] result in
                guard let self, !self.closed.load(ordering: .relaxed) else { return }
                switch result {
                case .success(.string(let text)):
                    self.events(.text(text))
                    self.receive()
                case .success(.data(let data)):
                    self.events(.text(String(decoding: data, as: UTF8.self)))
                    self.receive()
                case .success:
                    self.receive()
                case .failure(let error):
                    self.finish(reason: error.localizedDescription)
                }
            }
        }

        private func finish(reason: String) {
            guard !closed.exchange(true, ordering: .relaxed) else { return }
            events(.closed(reason: reason))
        }

        func send(_ text: String) {
            task.send(.string(text)) { [weak self] error in
                if let error { self?.finish(reason: error.localizedDescription) }
            }
        }

        func close() {
            closed.store(true, ordering: .relaxed)
            task.cancel(with: .normalClosure, reason: nil)
        }
    }
#endif
