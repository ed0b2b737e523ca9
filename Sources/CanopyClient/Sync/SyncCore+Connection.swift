// SyncCore+Connection -- performing the connection machine's actions: transports, the restore, requests, auth.

import CanopyCore
import Dispatch

extension SyncCore {
    /// The ping control message, serialized once.
    static let pingText = Wire.control(Wire.Control.ping).serialized()

    /// Feeds the connection machine an event and performs the actions it returns. Queue only.
    func drive(_ event: (inout ConnectionMachine, MonotonicInstant) -> [ConnectionMachine.Action]) {
        let actions = event(&connection, clock.now())
        for action in actions { perform(action) }
        armTimer()
    }

    private func perform(_ action: ConnectionMachine.Action) {
        switch action {
        case .publish(let state):
            setConnectionState(state)
        case .openTransport(let attempt):
            openTransport(attempt)
        case .closeTransport:
            transport?.close()
            transport = nil
        case .ping:
            transport?.send(Self.pingText)
        case .restore:
            restore()
            setInfo(connected: true)
        case .connectionLost(let wasConnected, let reason):
            switch reason {
            case .connectTimeout: logger.info("client.connect_timeout")
            case .silent: logger.info("client.connection_dead")
            case .transportClosed, .serverReset, .offline: break
            }
            connectionLost(wasConnected: wasConnected)
        case .refreshToken:
            refreshToken()
        }
    }

    /// Arms a timer for the machine's next deadline unless one at or before it is armed already. A timer that
    /// fires early or late only ticks: the machine acts on what is due at the time it reads.
    private func armTimer() {
        guard let deadline = connection.nextDeadline else { return }
        if let armed = armedDeadline, armed <= deadline { return }
        armedDeadline = deadline
        let delay = max(0, deadline.seconds(since: clock.now()))
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            if self.armedDeadline == deadline { self.armedDeadline = nil }
            self.drive { machine, now in machine.tick(now: now) }
        }
    }

    /// Starts the first connection attempt. Queue only.
    func start() { drive { machine, now in machine.start(now: now) } }

    private func openTransport(_ attempt: Int) {
        assembler = FrameAssembler()
        resetInAttempt = false
        do {
            transport = try makeTransport(redirect ?? endpoint) { [weak self] event in
                guard let self else { return }
                self.queue.async { self.transportEvent(event, attempt: attempt) }
            }
        } catch {
            logger.warning("client.transport_failed", ["reason": "\(error)"])
            lastConnectionError = (error as? any CanopyError)?.userMessage ?? "\(error)"
            drive { machine, now in machine.transportClosed(attempt: attempt, now: now) }
        }
    }

    private func transportEvent(_ event: TransportEvent, attempt: Int) {
        guard connection.received(attempt: attempt, now: clock.now()) else { return }
        switch event {
        case .opened:
            return  // the server speaks first (handshake)
        case .closed(let reason):
            logger.debug("client.connection_closed", ["reason": reason])
            lastConnectionError = reason
            // A connection that failed before its handshake, to a host a reset named, means that node is gone:
            // back to the configured one (the connection that brought the reset itself ends this way too).
            if !connection.isConnected, redirect != nil, !resetInAttempt {
                logger.info("client.redirect_failed", ["host": redirect.map { "\($0.host):\($0.port)" } ?? ""])
                redirect = nil
            }
            drive { machine, now in machine.transportClosed(attempt: attempt, now: now) }
        case .text(let frame):
            do {
                guard let text = try assembler.feed(frame) else { return }
                received(try ServerMessage.parse(text), attempt: attempt)
            } catch {
                logger.warning("client.bad_message")
                drive { machine, now in machine.transportClosed(attempt: attempt, now: now) }
            }
        case .texts(let frames):
            // Each frame is checked against the attempt again: one of them may end it (a bad message, a reset).
            for frame in frames { transportEvent(.text(frame), attempt: attempt) }
        }
    }

    private func received(_ message: ServerMessage, attempt: Int) {
        switch message {
        case .handshake(let timestamp, _):
            guard !connection.isConnected else { return }
            if let timestamp {
                serverOffset.set(timestamp.subtractingSaturated(SystemClock().nowMilliseconds()))
                info["serverTimeOffset"] = .int(serverOffset.milliseconds)
            }
            drive { machine, now in machine.handshake(attempt: attempt, now: now) }
        case .control(let type, let payload):
            switch type {
            case Wire.Control.reset:
                if let host = payload.stringValue {
                    follow(resetTo: host)
                    resetInAttempt = true
                }
                drive { machine, now in machine.serverRequestedReconnect(now: now) }
            case Wire.Control.shutdown:
                logger.warning("client.server_shutdown", ["reason": payload.stringValue ?? ""])
                drive { machine, now in machine.transportClosed(attempt: attempt, now: now) }
            default:
                return
            }
        case .reply(let request, let status, let data):
            requests.reply(request)?(.reply(status: status, data: data))
        case .push(let action, let body):
            handlePush(action, body)
        }
    }

    /// Remembers the host a reset names (`host` or `host:port`) as where to connect next.
    private func follow(resetTo host: String) {
        var next = redirect ?? endpoint
        var name = Substring(host)
        var port = next.port
        if let colon = name.lastIndex(of: ":"), let number = Int(name[name.index(after: colon)...]),
            (1...65535).contains(number)
        {
            port = number
            name = name[..<colon]
        }
        guard !name.isEmpty else { return }
        next.host = String(name)
        next.port = port
        redirect = next == endpoint ? nil : next
        if redirect != nil { logger.info("client.redirected", ["host": host]) }
    }

    /// Sends a data request now (connected) and routes its reply to `handler`. The frames wait while store
    /// rows submitted before them are not yet committed (see SyncCore+Writes).
    func send(_ action: String, _ body: JSONValue, handler: @escaping (RequestOutcome) -> Void) {
        precondition(connection.isConnected, "send requires a connection")
        transmit(requests.make(action, body, handler: handler))
    }

    private func transmit(_ frames: [String]) {
        guard !frames.isEmpty else { return }
        for frame in frames { transport?.send(frame) }
        connection.sent(now: clock.now())
    }

    /// Submits a store operation that requests made after it must wait for; the frames it holds go out on the
    /// queue once it is committed (or failed).
    func submitGating(_ operation: (_ done: @escaping @Sendable (Bool) -> Void) -> Void) {
        let ticket = requests.submitStoreOperation()
        operation { [weak self] _ in
            guard let self else { return }
            self.queue.async { self.transmit(self.requests.storeCommitted(ticket)) }
        }
    }

    /// Sends a request now when connected, otherwise after the next handshake.
    func request(_ action: String, _ body: JSONValue, handler: @escaping (RequestOutcome) -> Void) {
        if connection.isConnected {
            send(action, body, handler: handler)
        } else {
            requests.deferUntilConnected(action, body, handler: handler)
        }
    }

    /// The restore sequence after a handshake (Protocol.md#Restore-sequence): auth, listens, pending writes, deferred
    /// requests — pipelined; the server handles one connection's requests strictly in order.
    private func restore() {
        if let token { sendAuth(token) }
        for key in listens.keys { sendListen(key) }
        resendWrites()
        for item in requests.takeDeferred() { send(item.action, item.body, handler: item.handler) }
    }

    /// What a lost connection means for requests and data (the machine already chose what comes next).
    private func connectionLost(wasConnected: Bool) {
        listens.connectionLost()
        for handler in requests.connectionLost() { handler(.disconnected) }
        if wasConnected { setInfo(connected: false) }
        resumeWaitersOnHeldData()
    }

    func goOffline() { drive { machine, now in machine.goOffline(now: now) } }

    func goOnline() { drive { machine, now in machine.goOnline(now: now) } }

    // MARK: - auth

    func sendAuth(_ credential: String, completion: (@Sendable () -> Void)? = nil) {
        send(Wire.Action.auth, [Wire.Key.credential: .string(credential)]) { [weak self] outcome in
            defer { completion?() }
            guard let self, case .reply(let status, let data) = outcome else { return }
            if status == Wire.Status.ok {
                // The expiry is server wall time; from here on it is a deadline on the monotonic clock.
                let expiresIn = data["expires"]?.int64Value.map {
                    // Saturating: the server's number, however large, must not trap here.
                    Double($0.multipliedSaturated(by: 1000).subtractingSaturated(self.serverNow)) / 1000
                }
                let refreshable = self.tokenRefresher != nil
                self.drive { machine, now in
                    machine.authAccepted(expiresIn: expiresIn, refreshable: refreshable, now: now)
                    return []
                }
            } else {
                // The server keeps the socket and treats us as unauthenticated; a refresher may fix the token.
                self.logger.warning("client.auth_failed", ["status": status])
                self.drive { machine, _ in machine.authRefused() }
            }
        }
    }

    /// Replaces the token; re-authenticates on the live socket. `completion` runs on the queue when done.
    func setToken(_ newToken: String?, completion: @escaping @Sendable () -> Void) {
        token = newToken
        connection.tokenReplaced()
        guard connection.isConnected else {
            completion()
            return
        }
        if let newToken {
            sendAuth(newToken, completion: completion)
        } else {
            send(Wire.Action.unauth, [:]) { _ in completion() }
        }
    }

    /// Asks the refresher for a new token and re-authenticates with it (expiry, `ac` revocation, auth failure).
    func refreshToken() {
        guard let refresher = tokenRefresher, !isClosed else { return }
        Task { [weak self] in
            let fresh = await refresher()
            guard let self else { return }
            self.queue.async {
                guard let fresh, fresh != self.token else { return }
                self.setToken(fresh) {}
            }
        }
    }
}
