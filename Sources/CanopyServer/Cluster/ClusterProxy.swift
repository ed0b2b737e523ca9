// ClusterProxy -- REST and SSE requests for a namespace another node owns, forwarded to it and answered from
// its answer (Cluster.md#How-a-client-reaches-its-node).
//
// A `307` would do for a client that follows redirects with its credential, but HTTP clients drop
// `Authorization` when a redirect changes the port or host (Python's requests, which firebase-admin uses; curl),
// so the node proxies instead: the client's request, credential included, goes to the owner, which evaluates
// the rules as for any request; the owner's answer comes back as it is. Requests ride on keep-alive connections
// to the owner (ProxyConnectionPool: reused after a complete response, bounded, closed when idle, a request resent
// only when repeating it cannot change its outcome). An event stream is relayed byte for byte on a connection of
// its own for as long as both ends stay open. The blocking HTTP client runs on the proxy's threads (ProxyThreads),
// never on the loop; the number of requests in flight is bounded (beyond it, 503).

import CanopyCore
import CanopyNet
import Dispatch
import Synchronization

final class ClusterProxy: Sendable {
    /// Marks a forwarded request; a node receiving one for a namespace it does not own answers 503 instead of
    /// forwarding it again (owners that disagree for a moment must not bounce a request around).
    static let forwardedHeader = "x-canopy-forwarded"
    /// A replica's forwarded transaction: the wire hash the node at the path must have (`WriteCondition.hash`).
    static let hashConditionHeader = "X-Canopy-If-Hash"
    /// Names the node that answered a proxied request (its advertised URL).
    static let ownerHeader = "X-Canopy-Owner"
    /// Requests (and event streams) in flight through the proxy at most.
    static let maximumInFlight = 256

    /// The threads forwarded requests and relayed streams block on, one each (see ProxyThreads for why not GCD).
    private let threads = ProxyThreads(maximumThreads: maximumInFlight)
    private let inFlight = Atomic<Int>(0)
    private let node: String
    /// The keep-alive connections to owners, shared by every proxied request (not by event streams).
    let pool: ProxyConnectionPool

    init(node: String, pool: ProxyConnectionPool = ProxyConnectionPool()) {
        self.node = node
        self.pool = pool
    }

    /// Runs blocking work of this node's own towards other nodes (a replica's forwarded write) on the proxy's
    /// threads, with its pooled connections. Not bounded by `maximumInFlight`: such work is bounded by the
    /// writers' own sessions, and a job beyond the threads waits for one.
    func runBlocking(_ job: @escaping @Sendable (ProxyConnectionPool) -> Void) {
        let pool = self.pool
        threads.run { job(pool) }
    }

    /// Headers a proxy must not pass on (RFC 9110 §7.6.1), and those it sets itself.
    private static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
        "proxy-authorization", "proxy-authenticate", "host", "content-length", "date",
    ]

    /// Forwards `request` to the node at `url` (`http://host:port`) and answers `responder` on `loop`.
    func forward(_ request: HTTPRequest, _ responder: HTTPResponder, to url: String, loop: EventLoop) {
        let host = ClusterConfiguration.host(of: url)
        guard url.hasPrefix("http://"), let colon = host.lastIndex(of: ":"),
            let port = Int(host[host.index(after: colon)...])
        else {
            // An https owner (or one without a port) is reached by the client itself.
            return responder.respond(Self.redirect(request, to: url))
        }
        guard inFlight.add(1, ordering: .relaxed).newValue <= Self.maximumInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            return responder.respond(
                HTTPResponse.error(status: 503, message: "Too many requests are being forwarded; try again."))
        }
        var headers: [(String, String)] = []
        for (name, value) in request.headers where !Self.hopByHop.contains(name.lowercased()) {
            headers.append((name, value))
        }
        headers.append((Self.forwardedHeader, node))
        headers.append(("X-Forwarded-For", request.remoteAddress))
        let forwarded = headers
        let isStream =
            request.method == "GET" && (request.header("accept")?.lowercased().contains("text/event-stream") ?? false)
        let target = request.target
        let method = request.method
        let body = request.body
        let ownerHost = String(host[..<colon])
        let reply = LoopHeld(responder, loop: loop)
        threads.run { [self] in
            defer { inFlight.subtract(1, ordering: .relaxed) }
            if isStream {
                let client = HTTPClient(host: ownerHost, port: port, timeoutSeconds: 120)
                defer { client.close() }
                return relayStream(client, target: target, headers: forwarded, owner: url, reply: reply, loop: loop)
            }
            let answer: HTTPResponse
            do {
                let response = try pool.request(
                    host: ownerHost, port: port, method, target, headers: forwarded, body: body)
                answer = HTTPResponse(
                    status: response.status, headers: Self.passOn(response.headers) + [(Self.ownerHeader, url)],
                    body: response.body)
            } catch {
                // Never resent (ProxyConnectionPool.mayResend): the client is told it may have been applied.
                let applied = ProxyConnectionPool.mayResend(method) ? "" : "; the request may have been applied there"
                answer = HTTPResponse.error(
                    status: 502, message: "The node serving this namespace did not answer: \(error)\(applied)")
            }
            loop.execute { reply.value.respond(answer) }
        }
    }

    /// An event stream: the owner's head, then its bytes as they arrive, until either side closes.
    private func relayStream(
        _ client: HTTPClient, target: String, headers: [(String, String)], owner url: String,
        reply: LoopHeld<HTTPResponder>,
        loop: EventLoop
    ) {
        let head: HTTPClientResponse
        do {
            head = try client.openStream(target, headers: headers)
        } catch {
            let answer = HTTPResponse.error(status: 502, message: "The node serving this namespace did not answer: \(error)")
            loop.execute { reply.value.respond(answer) }
            return
        }
        let closed = Atomic<Bool>(false)
        let slot = StreamSlot()
        let opened = DispatchSemaphore(value: 0)
        let passed = Self.passOn(head.headers) + [(Self.ownerHeader, url)]
        loop.execute {
            let stream = reply.value.startStream(status: head.status, headers: passed)
            stream.onClose = { closed.store(true, ordering: .relaxed) }
            if stream.isClosed { closed.store(true, ordering: .relaxed) }
            slot.stream = stream
            opened.signal()
        }
        opened.wait()
        let stream = LoopHeld(slot.stream, loop: loop)
        while !closed.load(ordering: .relaxed) {
            guard let bytes = try? client.readChunk(), !bytes.isEmpty else { break }
            loop.execute { stream.value?.send(bytes) }
        }
        loop.execute { stream.value?.close() }
    }

    /// A `307` to the same path and query on the owner.
    static func redirect(_ request: HTTPRequest, to url: String) -> HTTPResponse {
        var base = Substring(url)
        while base.hasSuffix("/") { base = base.dropLast() }
        var body: [UInt8] = []
        JSONValue.object([JSONMember("error", .string("This namespace is served by \(url); repeat the request there."))])
            .write(into: &body)
        return HTTPResponse(
            status: 307,
            headers: [("Location", String(base) + request.target), ("Content-Type", "application/json; charset=utf-8")],
            body: body)
    }

    private static func passOn(_ headers: [(name: String, value: String)]) -> [(String, String)] {
        headers.filter { !hopByHop.contains($0.name.lowercased()) }.map { ($0.name, $0.value) }
    }
}

/// The relayed stream, set on the loop before the proxy thread (which waits for it) reads it.
private final class StreamSlot: @unchecked Sendable {  // safe: written once, then read after a semaphore
    var stream: HTTPStream?
}
