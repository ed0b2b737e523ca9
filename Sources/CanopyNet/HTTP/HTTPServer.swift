// HTTPServer -- a listening socket on an event loop: accepts connections, enforces limits, shuts down gracefully.
//
// Two budgets span all connections: the bytes of request bodies in flight (`bodyBudget`, checked by each
// connection when a head arrives and as a chunked body grows) and the unwritten output of streaming connections
// (checked at the end of each loop pass, after every connection has flushed: past it, the largest backlogs are
// closed first, as slow consumers, until the rest fit).
import CCanopyLinux
import CanopyCore

#if canImport(Glibc)
    import Glibc
#endif

/// An HTTP/1.1 server on one ``EventLoop``. Loop-confined: create it on the loop (or before the loop runs)
/// and call it only there.
///
/// ```swift
/// let server = try HTTPServer(loop: loop, host: "127.0.0.1", port: 0, limits: HTTPServerLimits(), handler: app)
/// try server.start()
/// print("listening on \(server.port)")
/// ```
public final class HTTPServer {
    private static let maxAcceptsPerPass = 256
    private static let acceptPauseMs: Int64 = 100

    /// The loop the server and all its connections run on.
    public let loop: EventLoop
    /// The limits every connection enforces.
    public let limits: HTTPServerLimits
    let handler: any HTTPHandler
    let logger = Logger(label: "canopy.net")

    /// The bound port (the kernel-chosen one when created with port 0).
    public let port: Int
    private var listenFD: Int32
    private var isRegistered = false
    private var connections: [Int: HTTPConnection] = [:]
    private var nextConnectionID = 0
    /// Connections with output to write this pass (answers before WebSockets, see `FlushOrder`).
    private var dirty = FlushOrder<HTTPConnection>()
    private var isShuttingDown = false
    private var shutdownCompletion: (() -> Void)?
    private var shutdownTimer: TimerHandle?
    /// Unwritten output of each streaming connection with some (by id), and their sum.
    private var backlogs: [Int: Int] = [:]
    /// The unwritten output of every stream and WebSocket together, as of the last flush.
    public private(set) var streamingBacklogBytes = 0
    /// The bytes of every request body in flight (``HTTPServerLimits/maxBodyMemoryBytes``).
    public let bodyBudget: BodyMemoryBudget
    /// Requests answered 503 because their body did not fit in ``bodyBudget``.
    public internal(set) var bodyMemoryRefusals = 0
    /// Streams and WebSockets closed because all backlogs together passed ``HTTPServerLimits/outputMemoryLimitBytes``.
    public internal(set) var outputBudgetDisconnects = 0

    /// The certificate new connections are served with; nil serves plaintext. Replacing it (a `SIGHUP` reload)
    /// changes only connections accepted afterwards: each TLS session keeps the context it started from.
    public var tlsContext: TLSServerContext?

    /// Binds and listens on `host:port` (`SO_REUSEADDR`); connections are accepted once ``start()`` runs.
    /// - Parameters:
    ///   - host: an IPv4 or IPv6 literal, or `localhost`.
    ///   - port: the TCP port, or 0 for an ephemeral one (read it back from ``port``).
    /// - Throws: ``NetError`` when the address is invalid or the socket cannot be bound.
    public init(loop: EventLoop, host: String, port: Int, limits: HTTPServerLimits, handler: any HTTPHandler) throws {
        loop.assertInLoop()
        let (fd, boundPort) = try Socket.listen(host: host, port: port)
        self.loop = loop
        self.limits = limits
        self.handler = handler
        self.listenFD = fd
        self.port = boundPort
        self.bodyBudget = BodyMemoryBudget(limitBytes: limits.maxBodyMemoryBytes)
        loop.addFlushHook { [weak self] in self?.flushDirtyConnections() }
    }

    /// A server without a listening socket, for in-memory tests that hand it connected descriptors through
    /// ``adopt(fd:remoteAddress:)`` (one end of a socket pair) on a loop driven by hand.
    package init(loop: EventLoop, limits: HTTPServerLimits, handler: any HTTPHandler) {
        loop.assertInLoop()
        self.loop = loop
        self.limits = limits
        self.handler = handler
        self.listenFD = -1
        self.port = 0
        self.bodyBudget = BodyMemoryBudget(limitBytes: limits.maxBodyMemoryBytes)
        loop.addFlushHook { [weak self] in self?.flushDirtyConnections() }
    }

    deinit {
        // A started server must be shut down on its loop; an unstarted one only owns its descriptor.
        if listenFD >= 0 && !isRegistered { Socket.close(listenFD) }
    }

    /// Open connections, for metrics and tests.
    public var connectionCount: Int { connections.count }
    /// Streams and WebSockets closed so far because their peer stopped reading (output over the hard limit).
    public internal(set) var slowConsumersDisconnected = 0
    /// Bytes written to client sockets so far (responses, streams, WebSocket frames), for metrics.
    public internal(set) var bytesSent = 0
    /// Connections accepted so far, and refused (over `maxConnections`), for metrics.
    public private(set) var connectionsAccepted = 0
    public private(set) var connectionsRefused = 0
    /// Open connections that were upgraded to a WebSocket, for metrics.
    public var webSocketCount: Int { connections.values.reduce(0) { $0 + ($1.isWebSocket ? 1 : 0) } }
    /// Whether the server still accepts connections (false once a shutdown or drain began).
    public var isAccepting: Bool { isRegistered }

    /// Starts accepting connections.
    /// - Throws: ``NetError`` if the listening socket cannot be registered.
    public func start() throws {
        loop.assertInLoop()
        precondition(listenFD >= 0 && !isRegistered, "HTTPServer.start() called twice or after shutdown")
        try loop.register(fd: listenFD, readable: true, writable: false) { [weak self] _ in
            self?.acceptConnections()
        }
        isRegistered = true
        logger.info("http.listen", ["port": "\(port)", "tls": tlsContext == nil ? "off" : "on"])
    }

    /// Stops accepting, then closes connections and calls `then` on the loop once all are closed.
    ///
    /// Graceful: answers already in progress are completed (the last one says `Connection: close`), idle
    /// keep-alive connections close at once, streams end (their `onClose` fires), and anything still open after
    /// ``HTTPServerLimits/shutdownTimeoutMs`` is closed. Not graceful: everything closes now.
    public func shutdown(graceful: Bool, then: @escaping () -> Void) {
        loop.assertInLoop()
        precondition(!isShuttingDown, "HTTPServer.shutdown called twice")
        isShuttingDown = true
        shutdownCompletion = then
        stopListening()
        logger.info("http.shutdown", ["graceful": "\(graceful)", "connections": "\(connections.count)"])
        let open = Array(connections.values)
        if graceful {
            for connection in open { connection.beginShutdown() }
            if !connections.isEmpty {
                shutdownTimer = loop.schedule(afterMilliseconds: limits.shutdownTimeoutMs) { [weak self] in
                    self?.forceCloseAll()
                }
            }
        } else {
            for connection in open { connection.close() }
        }
        finishShutdownIfDone()
    }

    /// Closes the listening socket: no new connection is accepted, open ones go on (the first step of a drain,
    /// before ``shutdown(graceful:then:)``).
    public func stopAccepting() {
        loop.assertInLoop()
        stopListening()
    }

    // MARK: Connections

    func markDirty(_ connection: HTTPConnection) {
        guard !connection.isDirty else { return }
        connection.isDirty = true
        dirty.append(connection, isAnswering: !connection.isWebSocket || connection.isAnswering)
    }

    func connectionClosed(_ connection: HTTPConnection) {
        connections[connection.id] = nil
        backlogChanged(connection, to: 0)
        logger.trace("conn.close", ["conn": "\(connection.id)"])
        finishShutdownIfDone()
    }

    private func flushDirtyConnections() {
        // Flushing can parse pipelined requests whose handlers answer at once, and closing a connection over the
        // output budget can make others write (a session's listens end): repeat until quiet.
        repeat {
            while !dirty.isEmpty {
                for (index, connection) in dirty.nextBatch().enumerated() {
                    connection.flush()
                    // An answer another thread queued while this pass writes (a publish made durable while its
                    // 7.6 MB of events go out to 1,000 WebSockets) is written now, not after the rest of them.
                    if index % Self.answerCheckInterval == Self.answerCheckInterval - 1
                        && loop.runAnswersQueuedDuringFlush()
                    {
                        flushAnswers()
                    }
                }
            }
            enforceOutputBudget()
        } while !dirty.isEmpty
    }

    /// Connections written between two looks for answers queued meanwhile (a look takes the loop's queue lock).
    private static let answerCheckInterval = 16

    private func flushAnswers() {
        while dirty.hasAnswers {
            for connection in dirty.takeAnswers() { connection.flush() }
        }
    }

    /// A streaming connection's unwritten output is now `bytes` (0 once it is written or the connection closed).
    func backlogChanged(_ connection: HTTPConnection, to bytes: Int) {
        let old = connection.reportedBacklog
        guard old != bytes else { return }
        connection.reportedBacklog = bytes
        streamingBacklogBytes += bytes - old
        backlogs[connection.id] = bytes == 0 ? nil : bytes
    }

    /// Past the output budget, closes the streams and WebSockets with the largest backlogs first until the rest
    /// fit: the memory they hold together stays bounded however many stop reading, and the ones that stalled
    /// longest (they hold the most) go first, as the per-connection hard limit would take them later anyway.
    private func enforceOutputBudget() {
        guard streamingBacklogBytes > limits.outputMemoryLimitBytes else { return }
        for (id, backlog) in backlogs.sorted(by: { $0.value > $1.value }) {
            guard streamingBacklogBytes > limits.outputMemoryLimitBytes else { break }
            guard let connection = connections[id] else {
                backlogs[id] = nil
                continue
            }
            outputBudgetDisconnects += 1
            slowConsumersDisconnected += 1
            logger.warning(
                "conn.output_budget",
                [
                    "conn": "\(id)", "peer": connection.remoteAddress, "backlog": "\(backlog)",
                    "all_backlogs": "\(streamingBacklogBytes)", "total": "\(outputBudgetDisconnects)",
                ])
            connection.close()
        }
    }

    /// The answer to a request whose body does not fit in the body budget now.
    lazy var bodyMemoryRefusal: HTTPResponse = {
        var response = HTTPResponse.error(
            status: 503,
            message:
                "The server is receiving too many request bodies at once (at most "
                + "\(limits.maxBodyMemoryBytes >> 20) MiB together); retry shortly.")
        response.headers.append(("Retry-After", "1"))
        return response
    }()

    private func acceptConnections() {
        for _ in 0..<Self.maxAcceptsPerPass {
            let accepted: (fd: Int32, peer: String)?
            do {
                accepted = try Socket.accept(listener: listenFD)
            } catch {
                // Out of descriptors or buffers: stop polling the listener briefly instead of spinning.
                logger.warning("http.accept_failed", ["error": error.userMessage])
                pauseAccepting()
                return
            }
            guard let (fd, peer) = accepted else { return }
            guard connections.count < limits.maxConnections else {
                connectionsRefused += 1
                refuse(fd)
                continue
            }
            connectionsAccepted += 1
            do {
                try adopt(fd: fd, remoteAddress: peer)
            } catch {
                Socket.close(fd)
            }
        }
    }

    /// Serves the connected, non-blocking descriptor `fd` as an accepted connection; it is closed with the
    /// connection. Call on the loop.
    /// - Throws: ``NetError`` when the descriptor cannot be registered (the caller still owns it then).
    package func adopt(fd: Int32, remoteAddress: String) throws(NetError) {
        loop.assertInLoop()
        nextConnectionID += 1
        let tls: TLSSession?
        do {
            tls = try tlsContext.map { context throws(TLSError) in try TLSSession(server: context, fd: fd) }
        } catch {
            throw .system(syscall: "SSL_new", errno: ENOMEM)
        }
        let connection = HTTPConnection(
            id: nextConnectionID, fd: fd, remoteAddress: remoteAddress, loop: loop, server: self, limits: limits,
            tls: tls)
        try connection.start()
        connections[connection.id] = connection
        logger.trace("conn.open", ["conn": "\(connection.id)", "peer": remoteAddress])
    }

    // Built once, so without a `Date` (optional for 5xx answers; a frozen one would be wrong).
    private static let refusal = HTTPResponseWriter.bytes(
        for: .error(status: 503, message: "Too many connections"), persistence: .close, date: nil)

    /// Best-effort 503 to a connection over the limit, then close.
    private func refuse(_ fd: Int32) {
        // Over TLS there is no session to say it in: the client sees the connection close.
        if tlsContext == nil { _ = Self.refusal.withUnsafeBytes { Socket.write(fd, $0) } }
        Socket.shutdownWrite(fd)
        Socket.close(fd)
        logger.debug("http.refused", ["reason": "max_connections"])
    }

    private func pauseAccepting() {
        guard isRegistered else { return }
        loop.setInterest(fd: listenFD, readable: false, writable: false)
        loop.schedule(afterMilliseconds: Self.acceptPauseMs) { [weak self] in
            guard let self, self.isRegistered else { return }
            self.loop.setInterest(fd: self.listenFD, readable: true, writable: false)
        }
    }

    private func stopListening() {
        guard listenFD >= 0 else { return }
        if isRegistered { loop.unregister(fd: listenFD) }
        isRegistered = false
        Socket.close(listenFD)
        listenFD = -1
    }

    /// Closes every connection now (a drain whose deadline passed).
    public func forceCloseAll() {
        loop.assertInLoop()
        shutdownTimer = nil
        for connection in Array(connections.values) { connection.close() }
    }

    private func finishShutdownIfDone() {
        guard connections.isEmpty, let completion = shutdownCompletion else { return }
        shutdownCompletion = nil
        shutdownTimer?.cancel()
        shutdownTimer = nil
        // Run outside whatever close path got us here.
        loop.schedule(afterMilliseconds: 0, completion)
    }
}
