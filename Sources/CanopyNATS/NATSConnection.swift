// NATSConnection -- a client connection to a NATS cluster: publish, subscribe, request/reply, reconnect.
//
// Concurrency model (Cluster.md#The-NATS-client): one dedicated reader thread per connection with a blocking
// socket. The thread reads and parses everything the server sends, answers PING, delivers messages to their
// subscriptions, and when the connection breaks it reconnects (backoff with jitter, over the configured servers
// and those the cluster announced), re-subscribes, then resumes reading. Any thread may publish, subscribe or
// make a request: writes are serialized by `writeLock` and go straight to the socket, requests block their
// caller on a semaphore until the reader thread hands them the reply. The daemon's event loop must therefore
// never call the blocking methods (`request`, `flush`, the JetStream calls); it hands them to a thread of its
// own and gets the result back with `EventLoop.execute`, as it does with SQLite.
//
// Subscription handlers run on the reader thread: they must be short and must not make requests on the same
// connection (the reply could only be read by the thread they block). A queue subscription (`subscribe(_:)`
// without a handler) buffers up to `maxPendingMessages` for a consumer thread instead.

import CanopyCore
import Dispatch
import Foundation

/// The state of a connection.
public enum NATSConnectionStatus: Sendable, Equatable {
    case connected
    case reconnecting
    case closed
}

/// A connection to one server of a NATS cluster at a time, failing over to the others.
///
/// Call ``close()`` when done: the reader thread holds the connection until then.
public final class NATSConnection: @unchecked Sendable {
    // safe: every mutable field below `lock` is read and written only with `lock` held; the socket is written
    // only with `writeLock` held (taken after `lock` is released, never the other way round); the parser and the
    // read buffer belong to the reader thread alone.
    public let options: NATSOptions
    let lock = NSCondition()
    private let writeLock = NSLock()

    private var status: NATSConnectionStatus = .reconnecting
    private var socket: NATSSocket?
    private var info: NATSServerInfo?
    private var current: NATSServerAddress?
    private var servers: [NATSServerAddress]
    private var subscriptions: [UInt64: NATSSubscription] = [:]
    private var nextSID: UInt64 = 1
    private var pongWaiters: [ReplyWaiter?] = []
    private var pingsOutstanding = 0
    private var requests: [String: ReplyWaiter] = [:]
    private var nextRequest: UInt64 = 0
    private var inboxSID: UInt64?
    private var readerRunning = false
    private var reconnects = 0
    private var lastErrorValue: NATSError?
    private var reconnectHandlers: [@Sendable () -> Void] = []

    /// The prefix of this connection's reply subjects (`_INBOX.<random>`).
    public let inboxPrefix: String

    /// Connects to the first server of `options.servers` that completes the handshake and starts the reader.
    /// - Throws: ``NATSError/cannotConnect(_:)`` when none does.
    public init(options: NATSOptions) throws(NATSError) {
        guard !options.servers.isEmpty else { throw .invalidArgument("no NATS server given") }
        self.options = options
        self.servers = options.servers
        self.inboxPrefix = "_INBOX." + NATSConnection.randomToken()
        var reasons: [String] = []
        for server in options.servers {
            do throws(NATSError) {
                let (socket, info, parser) = try handshake(server)
                install(socket: socket, info: info, server: server)
                startReader(parser: parser)
                return
            } catch {
                reasons.append(error.userMessage)
            }
        }
        throw .cannotConnect(reasons.joined(separator: "; "))
    }

    deinit { close() }

    // MARK: State

    public var connectionStatus: NATSConnectionStatus { lock.locked { status } }
    /// The `INFO` of the server connected to (the last one while reconnecting).
    public var serverInfo: NATSServerInfo? { lock.locked { info } }
    public var connectedServer: NATSServerAddress? { lock.locked { status == .connected ? current : nil } }
    /// Every server the client knows: the configured ones, then those announced by the cluster.
    public var knownServers: [NATSServerAddress] { lock.locked { servers } }
    /// How many times the connection was re-established.
    public var reconnectCount: Int { lock.locked { reconnects } }
    /// The last error that ended a connection or that a server reported (`-ERR`).
    public var lastError: NATSError? { lock.locked { lastErrorValue } }

    /// Calls `handler` (on a background queue, never the reader thread) each time the connection is
    /// re-established; subscriptions are already renewed by then. JetStream consumers use it to re-create
    /// their server-side state.
    public func onReconnect(_ handler: @escaping @Sendable () -> Void) {
        lock.locked { reconnectHandlers.append(handler) }
    }

    /// Closes the connection: pending requests fail with ``NATSError/closed``, the reader thread ends.
    public func close() {
        let (socket, ended): (NATSSocket?, [NATSSubscription]) = lock.locked {
            guard status != .closed else { return (nil, []) }
            status = .closed
            failWaiters(.closed)
            lock.broadcast()
            defer { subscriptions = [:] }
            return (self.socket, Array(subscriptions.values))
        }
        for subscription in ended { subscription.finish() }
        socket?.shutdown()
        guard !isReaderThread else { return }
        lock.locked {
            let deadline = Date().addingTimeInterval(5)
            while readerRunning && lock.wait(until: deadline) {}
        }
    }

    // MARK: Publishing

    /// The largest message the server accepts (`max_payload` of its `INFO`, headers included; 1 MiB before one).
    public var maxPayload: Int { lock.locked { info?.maxPayload ?? 1 << 20 } }

    /// Publishes a message (with `headers`: HPUB).
    /// - Throws: ``NATSError/payloadTooLarge(size:maximum:)`` past the server's `max_payload`;
    ///   ``NATSError/notConnected`` if the connection is down longer than `reconnectTimeout`.
    public func publish(
        _ subject: String, payload: some Collection<UInt8> = [], headers: NATSHeaders? = nil, replyTo: String? = nil
    ) throws(NATSError) {
        let bytes = try NATSEncoder.publish(subject: subject, replyTo: replyTo, headers: headers, payload: payload)
        let maximum = lock.locked { info?.maxPayload ?? 1 << 20 }
        let size = bytes.count - NATSEncoder.lineLength(bytes) - 2
        guard size <= maximum else { throw .payloadTooLarge(size: size, maximum: maximum) }
        try write(bytes)
    }

    /// Sends PING and waits for the server's PONG: everything published before has reached the server.
    public func flush(timeout: Duration? = nil) throws(NATSError) {
        let waiter = ReplyWaiter()
        try write(NATSEncoder.ping) { pongWaiters.append(waiter) }
        _ = try waiter.wait(timeout ?? options.requestTimeout, subject: "PING")
    }

    // MARK: Subscribing

    /// Subscribes with a handler, called on the reader thread for each message (keep it short; no requests).
    @discardableResult
    public func subscribe(
        _ subject: String, queue: String? = nil, handler: @escaping @Sendable (NATSMessage) -> Void
    ) throws(NATSError) -> NATSSubscription {
        try addSubscription(subject, queue: queue, handler: handler, buffered: false)
    }

    /// Subscribes with a bounded queue; read it with ``NATSSubscription/next(timeout:)``.
    public func subscribe(_ subject: String, queue: String? = nil) throws(NATSError) -> NATSSubscription {
        try addSubscription(subject, queue: queue, handler: nil, buffered: true)
    }

    private func addSubscription(
        _ subject: String, queue: String?, handler: (@Sendable (NATSMessage) -> Void)?, buffered: Bool
    ) throws(NATSError) -> NATSSubscription {
        let sid = lock.locked {
            defer { nextSID += 1 }
            return nextSID
        }
        let bytes = try NATSEncoder.subscribe(subject: subject, queue: queue, sid: sid)
        let subscription = NATSSubscription(
            connection: self, sid: sid, subject: subject, queue: queue, handler: handler,
            capacity: buffered ? options.maxPendingMessages : 0)
        // Registered before the send: a connection that breaks under it renews the subscription on reconnect.
        try write(bytes, renewedOnReconnect: true) { subscriptions[sid] = subscription }
        return subscription
    }

    func unsubscribe(_ subscription: NATSSubscription) {
        let present = lock.locked { subscriptions.removeValue(forKey: subscription.sid) != nil }
        subscription.finish()
        if present { try? write(NATSEncoder.unsubscribe(sid: subscription.sid, max: nil)) }
    }

    // MARK: Request/reply

    /// Publishes to `subject` with a reply subject of this connection's inbox and waits for the first reply.
    /// - Throws: ``NATSError/noResponders(subject:)`` (status 503) when nobody listens on `subject`,
    ///   ``NATSError/timeout(subject:)``, or ``NATSError/notConnected`` when the connection drops meanwhile.
    public func request(
        _ subject: String, payload: some Collection<UInt8> = [], headers: NATSHeaders? = nil,
        timeout: Duration? = nil
    ) throws(NATSError) -> NATSMessage {
        try ensureInbox()
        let waiter = ReplyWaiter()
        let token = lock.locked {
            nextRequest += 1
            return String(nextRequest)
        }
        let reply = inboxPrefix + "." + token
        let bytes = try NATSEncoder.publish(subject: subject, replyTo: reply, headers: headers, payload: payload)
        let maximum = lock.locked { info?.maxPayload ?? 1 << 20 }
        let size = bytes.count - NATSEncoder.lineLength(bytes) - 2
        guard size <= maximum else { throw .payloadTooLarge(size: size, maximum: maximum) }
        do throws(NATSError) {
            try write(bytes) { requests[token] = waiter }
            let message = try waiter.wait(timeout ?? options.requestTimeout, subject: subject)
            if message.status == 503 { throw NATSError.noResponders(subject: subject) }
            return message
        } catch {
            lock.locked { _ = requests.removeValue(forKey: token) }
            throw error
        }
    }

    private func ensureInbox() throws(NATSError) {
        let needed = lock.locked {
            guard inboxSID == nil else { return UInt64(0) }
            defer { nextSID += 1 }
            inboxSID = nextSID
            return nextSID
        }
        guard needed != 0 else { return }
        let prefix = inboxPrefix
        let subscription = NATSSubscription(
            connection: self, sid: needed, subject: prefix + ".*", queue: nil,
            handler: { [weak self] message in self?.deliverReply(message, prefix: prefix) }, capacity: 0)
        do throws(NATSError) {
            try write(NATSEncoder.subscribe(subject: prefix + ".*", queue: nil, sid: needed)) {
                subscriptions[needed] = subscription
            }
        } catch {
            lock.locked { inboxSID = nil }
            throw error
        }
    }

    private func deliverReply(_ message: NATSMessage, prefix: String) {
        let token = String(message.subject.dropFirst(prefix.count + 1))
        let waiter = lock.locked { requests.removeValue(forKey: token) }
        waiter?.resolve(.success(message))
    }

    // MARK: Writing

    /// Waits until connected (at most `reconnectTimeout`), runs `register` under the lock (so a reply or PONG
    /// cannot arrive before its waiter is known), then writes `bytes`. A send that fails throws `notConnected`,
    /// unless what `register` recorded is `renewedOnReconnect` (a subscription), which the reconnect sends again.
    func write(_ bytes: [UInt8], renewedOnReconnect: Bool = false, register: () -> Void = {}) throws(NATSError) {
        let socket: NATSSocket = try lock.locked { () throws(NATSError) -> NATSSocket in
            let deadline = Date().addingTimeInterval(options.reconnectTimeout.seconds)
            while status == .reconnecting {
                guard lock.wait(until: deadline) else { break }
            }
            switch status {
            case .closed: throw .closed
            case .reconnecting: throw .notConnected
            case .connected:
                guard let socket = self.socket else { throw .notConnected }
                register()
                return socket
            }
        }
        let sent = writeLock.locked { socket.sendAll(bytes) }
        if !sent {
            socket.shutdown()  // the reader sees the end of the stream and reconnects
            if renewedOnReconnect { return }
            throw .notConnected
        }
    }

    // MARK: The reader thread

    private var isReaderThread: Bool { Thread.current.name == "canopy.nats.\(inboxPrefix)" }

    private func startReader(parser: NATSParser) {
        lock.locked { readerRunning = true }
        let thread = Thread { [self] in
            runReader(parser: parser)
        }
        thread.name = "canopy.nats.\(inboxPrefix)"
        thread.start()
    }

    private func runReader(parser initial: NATSParser) {
        var parser = initial
        defer {
            lock.locked {
                readerRunning = false
                lock.broadcast()
            }
        }
        while true {
            guard let socket = lock.locked({ status == .connected ? self.socket : nil }) else { return }
            let reason = readUntilBroken(socket, &parser)
            socket.close()
            let shouldReconnect = lock.locked {
                self.socket = nil
                if status == .closed { return false }
                lastErrorValue = reason
                failWaiters(.notConnected)
                status = options.reconnect ? .reconnecting : .closed
                lock.broadcast()
                return options.reconnect
            }
            guard shouldReconnect, let next = reconnect() else {
                lock.locked {
                    status = .closed
                    lock.broadcast()
                }
                return
            }
            parser = next
            let handlers = lock.locked { reconnectHandlers }
            for handler in handlers { DispatchQueue.global().async { handler() } }
        }
    }

    /// Reads and dispatches until the socket ends, fails, goes stale or the server breaks the protocol.
    private func readUntilBroken(_ socket: NATSSocket, _ parser: inout NATSParser) -> NATSError {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            do throws(NATSProtocolError) {
                while let operation = try parser.next() {
                    if let failure = handle(operation, socket) { return failure }
                }
            } catch {
                return .protocolViolation(error)
            }
            switch socket.receive(into: &buffer) {
            case .bytes(let count):
                parser.append(buffer[0..<count])
            case .timedOut:
                let stale = lock.locked { () -> Bool in
                    guard pingsOutstanding < options.maxPingsOutstanding else { return true }
                    pingsOutstanding += 1
                    pongWaiters.append(nil)
                    return false
                }
                if stale { return .timeout(subject: "PING") }
                _ = writeLock.locked { socket.sendAll(NATSEncoder.ping) }
            case .closed:
                return lock.locked { status == .closed } ? .closed : .notConnected
            case .failed:
                return .notConnected
            }
        }
    }

    /// Performs one operation; a non-nil result ends the connection.
    private func handle(_ operation: NATSServerOperation, _ socket: NATSSocket) -> NATSError? {
        switch operation {
        case .message(let message):
            let subscription = lock.locked { subscriptions[message.sid] }
            subscription?.deliver(message)
        case .ping:
            _ = writeLock.locked { socket.sendAll(NATSEncoder.pong) }
        case .pong:
            let waiter = lock.locked { () -> ReplyWaiter? in
                pingsOutstanding = 0
                return pongWaiters.isEmpty ? nil : pongWaiters.removeFirst()
            }
            waiter?.resolve(.success(NATSMessage(subject: "PONG", sid: 0, replyTo: nil, headers: nil, payload: [])))
        case .ok:
            break
        case .info(let info):
            lock.locked { learn(info) }
            if info.lameDuck { return .server("the server entered lame duck mode") }
        case .error(let text):
            lock.locked { lastErrorValue = .server(text) }
            // Permissions violations leave the connection open; every other -ERR is followed by the server
            // closing it, which the read loop sees.
        }
        return nil
    }

    // MARK: Connecting

    /// Connects to `server`: reads INFO, sends CONNECT and PING, waits for PONG. Returns the parser holding
    /// whatever arrived after the PONG.
    private func handshake(_ server: NATSServerAddress) throws(NATSError) -> (NATSSocket, NATSServerInfo, NATSParser) {
        let socket = try NATSSocket.connect(
            to: server, timeout: options.connectTimeout, receiveTimeout: options.connectTimeout)
        var parser = NATSParser(limits: options.parserLimits)
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var info: NATSServerInfo?
        do throws(NATSError) {
            func nextOperation() throws(NATSError) -> NATSServerOperation {
                while true {
                    do throws(NATSProtocolError) {
                        if let operation = try parser.next() { return operation }
                    } catch {
                        throw .protocolViolation(error)
                    }
                    switch socket.receive(into: &buffer) {
                    case .bytes(let count): parser.append(buffer[0..<count])
                    case .timedOut: throw .cannotConnect("\(server): no answer within the connect timeout")
                    case .closed, .failed: throw .cannotConnect("\(server): the server closed the connection")
                    }
                }
            }
            guard case .info(let first) = try nextOperation() else {
                throw .cannotConnect("\(server): the server did not start with INFO")
            }
            info = first
            // The server's own limit, never above ours, plus the headers a server adds to messages it makes.
            parser.limits.maxPayload = min(first.maxPayload, options.parserLimits.maxPayload) + (64 << 10)
            guard first.headers else { throw .cannotConnect("\(server): the server does not support headers") }
            guard socket.sendAll(NATSEncoder.connect(connectOptions()) + NATSEncoder.ping) else {
                throw .cannotConnect("\(server): the connection broke during the handshake")
            }
            handshake: while true {
                switch try nextOperation() {
                case .pong: break handshake
                case .error(let text): throw .cannotConnect("\(server): \(text)")
                case .info(let update): info = update
                case .ping: _ = socket.sendAll(NATSEncoder.pong)
                case .ok, .message: continue
                }
            }
            // Renew every subscription before anyone can publish on the new connection.
            let renew: [UInt8] = lock.locked {
                subscriptions.values.sorted { $0.sid < $1.sid }.reduce(into: []) { out, subscription in
                    out += (try? NATSEncoder.subscribe(
                        subject: subscription.subject, queue: subscription.queueGroup, sid: subscription.sid)) ?? []
                }
            }
            if !renew.isEmpty {
                guard socket.sendAll(renew) else {
                    throw .cannotConnect("\(server): the connection broke while re-subscribing")
                }
            }
        } catch {
            socket.close()
            throw error
        }
        return (socket, info!, parser)
    }

    private func install(socket: NATSSocket, info: NATSServerInfo, server: NATSServerAddress) {
        lock.locked {
            guard status != .closed else {
                socket.close()
                return
            }
            self.socket = socket
            self.current = server
            self.status = .connected
            pingsOutstanding = 0
            learn(info)
            lock.broadcast()
        }
        // From now on a read waits at most one ping interval.
        NATSSocket.setReceiveTimeout(socket.fd, options.pingInterval)
    }

    /// Records a server's INFO: its limits and the cluster's other servers. Called with `lock` held.
    private func learn(_ update: NATSServerInfo) {
        info = update
        for url in update.connectURLs {
            if let address = NATSServerAddress(url), !servers.contains(address) { servers.append(address) }
        }
    }

    /// Rounds over the known servers, starting after the one just lost, with growing waits between rounds.
    private func reconnect() -> NATSParser? {
        var wait = options.reconnectWait
        var round = 0
        while true {
            let (candidates, lost) = lock.locked { (servers, current) }
            var ordered = candidates
            if let lost, let index = ordered.firstIndex(of: lost) {
                ordered = Array(ordered[(index + 1)...] + ordered[...index])
            }
            for server in ordered {
                guard lock.locked({ status != .closed }) else { return nil }
                do throws(NATSError) {
                    let (socket, info, parser) = try handshake(server)
                    install(socket: socket, info: info, server: server)
                    lock.locked { reconnects += 1 }
                    return lock.locked { status == .connected } ? parser : nil
                } catch {
                    lock.locked { lastErrorValue = error }
                }
            }
            round += 1
            if let limit = options.maxReconnectRounds, round >= limit { return nil }
            let jitter = Double.random(in: 1.0...1.5)
            let deadline = Date().addingTimeInterval(wait.seconds * jitter)
            let closed = lock.locked { () -> Bool in
                while status != .closed && lock.wait(until: deadline) {}
                return status == .closed
            }
            if closed { return nil }
            wait = min(wait * 2, options.maxReconnectWait)
        }
    }

    private func connectOptions() -> JSONValue {
        var members: [JSONMember] = [
            JSONMember("verbose", false), JSONMember("pedantic", false), JSONMember("tls_required", false),
            JSONMember("name", .string(options.name)), JSONMember("lang", "swift"), JSONMember("version", "1.0"),
            JSONMember("protocol", 1), JSONMember("headers", true), JSONMember("no_responders", true),
            JSONMember("echo", true),
        ]
        if let user = options.user { members.append(JSONMember("user", .string(user))) }
        if let password = options.password { members.append(JSONMember("pass", .string(password))) }
        if let token = options.token { members.append(JSONMember("auth_token", .string(token))) }
        return .object(members)
    }

    /// Fails every pending request and flush. Called with `lock` held.
    private func failWaiters(_ error: NATSError) {
        for waiter in requests.values { waiter.resolve(.failure(error)) }
        requests = [:]
        for waiter in pongWaiters { waiter?.resolve(.failure(error)) }
        pongWaiters = []
        pingsOutstanding = 0
    }

    static func randomToken() -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        var generator = SystemRandomNumberGenerator()
        return String((0..<22).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
    }
}

/// One reply (or PONG) awaited by a blocked caller.
final class ReplyWaiter: @unchecked Sendable {
    // safe: `result` is written once under `guardLock` before `semaphore` is signalled, and read after the wait.
    private let semaphore = DispatchSemaphore(value: 0)
    private let guardLock = NSLock()
    private var result: Result<NATSMessage, NATSError>?

    func resolve(_ value: Result<NATSMessage, NATSError>) {
        let first = guardLock.locked {
            guard result == nil else { return false }
            result = value
            return true
        }
        if first { semaphore.signal() }
    }

    func wait(_ timeout: Duration, subject: String) throws(NATSError) -> NATSMessage {
        let nanoseconds = Int(min(timeout.seconds, 86_400) * 1e9)
        if semaphore.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut {
            resolve(.failure(.timeout(subject: subject)))
        }
        return try guardLock.locked { result! }.get()
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
