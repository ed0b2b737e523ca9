// LongPollEndpoint -- the `/.lp` transport: opens long-poll sessions, routes each request to its session by id and
// password, and ends sessions that went quiet.
//
// What anonymous clients can make the server hold is bounded per client address and in total
// (Architecture.md#Bounded-resources): sessions (`maxSessionsPerAddress` below `maxSessions`) and the characters
// of segments waiting to be reassembled (`maxPendingCharactersPerAddress` below `maxTotalPendingCharacters`, each
// session's own bounded by its reassembler). A client address is the IP address without the port; an IPv6
// address counts by its /64, the block one subscriber is usually given.

import CanopyCore
import CanopyNet

#if canImport(Glibc)
    import Glibc
#endif

/// All long-poll sessions of a daemon. Loop-confined; owned by the `RealtimeHub`.
final class LongPollEndpoint {
    unowned let hub: RealtimeHub
    var limits = LongPollLimits()
    private var connections: [String: LongPollConnection] = [:]
    /// The same sessions by their handshake's `s`, which names them in a WebSocket upgrade.
    private var connectionsByHandshake: [String: LongPollConnection] = [:]
    /// Live sessions per client address (`addressKey`); an address with none has no entry.
    private var sessionsByAddress: [String: Int] = [:]
    /// Pending segment characters per client address, and of all sessions (as counted after each request).
    private var pendingByAddress: [String: Int] = [:]
    private(set) var totalPendingCharacters = 0
    private var sweepTimer: TimerHandle?
    private let logger = Logger(label: "canopy.longpoll")

    init(hub: RealtimeHub) {
        self.hub = hub
        let configuration = hub.context.configuration
        limits.maxSessions = configuration.maxLongPollSessions
        limits.maxSessionsPerAddress = configuration.maxLongPollSessionsPerAddress
        limits.maxTotalPendingCharacters = configuration.maxLongPollPendingCharacters
        limits.maxPendingCharactersPerAddress = min(
            configuration.maxLongPollPendingCharactersPerAddress, configuration.maxLongPollPendingCharacters)
    }

    /// Live sessions.
    var sessionCount: Int { connections.count }

    /// Answers one `/.lp` request.
    func handle(_ request: HTTPRequest, _ responder: HTTPResponder) {
        do throws(LongPollError) {
            switch try LongPollRequest.parse(request.query, limits: limits) {
            case .start(let callbackID):
                try start(request, callbackID: callbackID, responder)
            case .poll(let credentials, let segments):
                let connection = try lookUp(credentials)
                do {
                    try admitPending(segments, for: connection)
                    defer { countPending(of: connection) }
                    try connection.received(segments, responder: responder)
                } catch {
                    logger.debug("lp.bad_segments", ["id": connection.id, "error": error.userMessage])
                    connection.terminate()
                    throw error
                }
            case .disconnectFrame(let credentials):
                let connection = try lookUp(credentials)
                responder.respond(
                    HTTPResponse(
                        status: 200,
                        headers: [("Content-Type", "text/html; charset=utf-8")]
                            + LongPollConnection.scriptHeaders.dropFirst(),
                        body: LongPollScript.disconnectFrame(
                            id: connection.id, password: connection.password, namespace: connection.namespaceName)
                    ))
            case .disconnect(let credentials):
                let connection = try lookUp(credentials)
                logger.debug("lp.client_left", ["id": connection.id])
                connection.terminate()
                responder.respond(LongPollConnection.response([]))
            }
        } catch {
            respond(error, responder)
        }
    }

    private func start(_ request: HTTPRequest, callbackID: String?, _ responder: HTTPResponder)
        throws(LongPollError)
    {
        let address = try admit(request)
        let context = hub.context
        var params: [String: String] = [:]
        for item in request.query where params[item.name] == nil { params[item.name] = item.value }
        let namespace: Namespace
        do {
            let name = try context.namespaceName(request, params: params)
            namespace = try context.namespace(name, whileRulesFail: true)
        } catch {
            responder.respond(LongPollConnection.response(Self.comment(error.userMessage), status: error.status))
            return
        }
        let connection = makeConnection(callbackID: callbackID, namespaceName: namespace.name, address: address)
        let session = WireSession(hub: hub, namespace: namespace, socket: connection)
        link(connection, to: session)
        hub.sessionOpened(session)
        session.start(
            host: request.header("host") ?? "\(context.configuration.host):\(context.configuration.port)")
        register(connection, handshakeID: session.handshakeID, responder)
    }

    /// Opens a session of namespace `name` while it loads (`RealtimeHub.openEarly`): its handshake is answered at
    /// once and its listens from the file (`WireEarlySession`); a `WireSession` takes it over once the tree is
    /// loaded. Returned started; nil when a limit refused the request (answered here).
    func startEarly(
        _ request: HTTPRequest, callbackID: String?, name: String, host: String, _ responder: HTTPResponder
    ) -> WireEarlySession? {
        let address: String
        do {
            address = try admit(request)
        } catch {
            respond(error, responder)
            return nil
        }
        let connection = makeConnection(callbackID: callbackID, namespaceName: name, address: address)
        let early = WireEarlySession(hub: hub, name: name, socket: connection, host: host)
        early.onTakeover = { [weak self, weak connection] session in
            guard let self, let connection else { return }
            self.link(connection, to: session)
        }
        early.start()  // queues the handshake, which the start answer carries
        register(connection, handshakeID: early.handshakeID, responder)
        return early
    }

    /// Answers a poll, the disconnect frame or a disconnect (`parsed` from `request`) of a session opened while its
    /// namespace loads, without waiting for the load; false for any other request.
    func answersWithoutLoad(_ parsed: LongPollRequest, _ request: HTTPRequest, _ responder: HTTPResponder) -> Bool {
        let credentials: LongPollCredentials
        switch parsed {
        case .poll(let named, _), .disconnectFrame(let named), .disconnect(let named): credentials = named
        case .start: return false
        }
        guard let connection = connections[credentials.id], !connection.isClosed, connection.session == nil else {
            return false
        }
        handle(request, responder)
        return true
    }

    /// Checks the session limits for a new session from `request`'s address, which it returns.
    private func admit(_ request: HTTPRequest) throws(LongPollError) -> String {
        let address = Self.addressKey(request.remoteAddress)
        guard sessionsByAddress[address, default: 0] < limits.maxSessionsPerAddress else {
            logger.debug("lp.address_limit", ["address": address])
            throw .tooManySessionsFromAddress
        }
        guard connections.count < limits.maxSessions else { throw .tooManySessions }
        return address
    }

    private func makeConnection(callbackID: String?, namespaceName: String, address: String) -> LongPollConnection {
        var id = Self.randomToken()
        while connections[id] != nil { id = Self.randomToken() }
        return LongPollConnection(
            id: id, password: Self.randomToken(), callbackID: callbackID, namespaceName: namespaceName,
            address: address, loop: hub.loop, limits: limits)
    }

    private func link(_ connection: LongPollConnection, to session: WireSession) {
        connection.session = session
        session.onEndTransmission = { [weak connection] in connection?.upgrade?.complete() }
    }

    /// Counts `connection` as live, names it by its handshake's `s`, and answers the start request.
    private func register(_ connection: LongPollConnection, handshakeID: String, _ responder: HTTPResponder) {
        connection.onFinished = { [weak self] finished in
            guard let self, self.connections[finished.id] === finished else { return }
            self.connections[finished.id] = nil
            self.connectionsByHandshake[handshakeID] = nil
            self.forget(finished)
        }
        connections[connection.id] = connection
        connectionsByHandshake[handshakeID] = connection
        sessionsByAddress[connection.address, default: 0] += 1
        responder.respond(LongPollConnection.response(connection.startResponseBody()))
        logger.debug("lp.started", ["id": connection.id, "ns": connection.namespaceName])
        scheduleSweep()
    }

    /// A WebSocket opened with `s=<handshake s>` to take over a long-poll session (see `LongPollUpgrade`). A socket
    /// that names no live session of `namespace` is told to reset (`r`), so the client drops it at once.
    func upgrade(_ socket: WebSocketConnection, handshakeID: String, namespace: Namespace, host: String) {
        guard let connection = connectionsByHandshake[handshakeID], !connection.isClosed,
            let session = connection.session, session.namespace === namespace
        else {
            logger.debug("lp.upgrade_unknown_session", ["ns": namespace.name])
            socket.send(text: Wire.control(Wire.Control.reset, .string(host)).serialized())
            socket.close(code: 1000, reason: "")
            return
        }
        connection.upgrade?.abandon()
        let upgrade = LongPollUpgrade(socket: socket, connection: connection)
        connection.upgrade = upgrade
        upgrade.begin()
        logger.debug("lp.upgrade_started", ["id": connection.id])
    }

    /// The session named by `credentials`; a wrong password is refused exactly like an unknown id.
    private func lookUp(_ credentials: LongPollCredentials) throws(LongPollError)
        -> LongPollConnection
    {
        guard let connection = connections[credentials.id], !connection.isClosed else {
            throw .unknownSession
        }
        guard connection.accepts(password: credentials.password) else {
            logger.info("lp.wrong_password", ["id": credentials.id])
            throw .wrongPassword
        }
        return connection
    }

    private func respond(_ error: LongPollError, _ responder: HTTPResponder) {
        responder.respond(
            LongPollConnection.response(Self.comment(error.userMessage), status: error.status))
    }

    // MARK: - budgets

    /// Refuses (503, `overloaded`) a request whose segments could take the pending characters of its client
    /// address or of the server past their budget. Counted before the segments are reassembled, as if none
    /// completed a message: a request is never admitted on the hope that it frees memory.
    private func admitPending(_ segments: [LongPollSegment], for connection: LongPollConnection)
        throws(LongPollError)
    {
        guard !segments.isEmpty else { return }
        var incoming = 0
        for segment in segments { incoming += segment.data.utf8.count }
        guard totalPendingCharacters + incoming <= limits.maxTotalPendingCharacters,
            pendingByAddress[connection.address, default: 0] + incoming <= limits.maxPendingCharactersPerAddress
        else {
            logger.warning(
                "lp.pending_budget", ["address": connection.address, "total": String(totalPendingCharacters)])
            throw .overloaded
        }
    }

    /// Brings the budgets up to date with the session's pending characters after a request.
    private func countPending(of connection: LongPollConnection) {
        let pending = connection.isClosed ? 0 : connection.pendingCharacters
        adjustPending(connection, by: pending - connection.countedPendingCharacters)
    }

    private func adjustPending(_ connection: LongPollConnection, by delta: Int) {
        guard delta != 0 else { return }
        connection.countedPendingCharacters += delta
        totalPendingCharacters += delta
        let remaining = pendingByAddress[connection.address, default: 0] + delta
        pendingByAddress[connection.address] = remaining > 0 ? remaining : nil
    }

    /// A session ended: it no longer counts for its address, and its pending segments are gone.
    private func forget(_ connection: LongPollConnection) {
        adjustPending(connection, by: -connection.countedPendingCharacters)
        let remaining = sessionsByAddress[connection.address, default: 0] - 1
        sessionsByAddress[connection.address] = remaining > 0 ? remaining : nil
    }

    /// The address sessions are counted by: the IP address of `remoteAddress` (`address:port`, `[v6]:port`)
    /// without the port; an IPv6 address by its first 64 bits (an IPv4-mapped one as the IPv4 address).
    static func addressKey(_ remoteAddress: String) -> String {
        var host = Substring(remoteAddress)
        if host.hasPrefix("["), let end = host.firstIndex(of: "]") {
            host = host[host.index(after: host.startIndex)..<end]
        } else if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon {
            host = host[..<colon]
        }
        guard host.contains(":") else { return String(host) }
        var address = in6_addr()
        guard inet_pton(AF_INET6, String(host), &address) == 1 else { return String(host) }
        let bytes = withUnsafeBytes(of: &address) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        let hex = Array("0123456789abcdef".utf8)
        var prefix = ""
        for (index, byte) in bytes[0..<8].enumerated() {
            if index > 0 && index % 2 == 0 { prefix += ":" }
            prefix += String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
        }
        return prefix + "::/64"
    }

    // MARK: - idle sessions

    private func scheduleSweep() {
        guard sweepTimer == nil else { return }
        sweepTimer = hub.loop.schedule(afterMilliseconds: limits.sweepIntervalMilliseconds) {
            [weak self] in
            guard let self else { return }
            self.sweepTimer = nil
            self.sweep()
            if !self.connections.isEmpty { self.scheduleSweep() }
        }
    }

    /// Ends every session (daemon shutdown): each held poll is answered with the close command, and each session's
    /// onDisconnect operations run while the namespaces are still open.
    func terminateAll() {
        for connection in Array(connections.values) { connection.terminate() }
    }

    /// Ends every session whose last request is older than the idle timeout (on the loop's clock).
    private func sweep() {
        let idle = connections.values.filter(\.isIdle)
        for connection in idle {
            logger.debug("lp.idle_timeout", ["id": connection.id])
            connection.terminate()
        }
    }

    // MARK: - helpers

    /// A JavaScript comment carrying `message` (one line), the body of refusals.
    private static func comment(_ message: String) -> [UInt8] {
        Array("// \(message.filter { $0 != "\n" && $0 != "\r" })\n".utf8)
    }

    /// 32 random letters and digits from the system's cryptographic generator.
    private static func randomToken() -> String { RandomToken.alphanumeric(32) }
}
