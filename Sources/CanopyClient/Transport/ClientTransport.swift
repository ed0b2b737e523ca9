// ClientTransport -- the one seam between the sync engine and a WebSocket implementation.

import Foundation

/// Something that happened on a transport, delivered in order on an arbitrary thread.
enum TransportEvent: Sendable {
    /// The WebSocket handshake completed.
    case opened
    /// One text frame arrived.
    case text(String)
    /// The text frames of one read from the socket, in order: handled in one pass of the sync queue, so what the
    /// server sent together (one commit's events) reaches observers with nothing queued in between.
    case texts([String])
    /// The connection failed or ended (not reported after `close()`).
    case closed(reason: String)
}

/// Where the client connects: `ws://host:port/.ws?v=5&ns=NAME`.
struct Endpoint: Sendable, Equatable {
    var host: String
    var port: Int
    var secure: Bool
    var namespace: String

    /// The request target of the WebSocket upgrade.
    var target: String {
        let ns = namespace.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? namespace
        return "/.ws?v=5&ns=\(ns)"
    }

    /// Reads `http(s)://host[:port]` or `ws(s)://host[:port]`.
    init(url: URL, namespace: String) throws(ClientError) {
        guard let scheme = url.scheme?.lowercased(), ["http", "https", "ws", "wss"].contains(scheme) else {
            throw .invalidURL(reason: "the scheme must be http, https, ws or wss")
        }
        guard let host = url.host, !host.isEmpty else { throw .invalidURL(reason: "the URL has no host") }
        guard !namespace.isEmpty else { throw .invalidURL(reason: "the namespace is empty") }
        secure = scheme == "https" || scheme == "wss"
        self.host = host
        port = url.port ?? (secure ? 443 : 80)
        self.namespace = namespace
    }
}

/// A WebSocket connection as the sync engine sees it. Implementations deliver `TransportEvent`s in order.
protocol ClientTransport: AnyObject, Sendable {
    /// Sends one text frame (queued until the connection opens).
    func send(_ text: String)
    /// Closes the connection; no further events are delivered.
    func close()
}

/// Opens a transport to an endpoint; events go to `events` in order.
typealias TransportFactory = @Sendable (Endpoint, @escaping @Sendable (TransportEvent) -> Void) throws -> any ClientTransport
