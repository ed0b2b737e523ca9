// SyncCore+Connection -- connecting, the handshake and restore sequence, replies, reconnecting with backoff.

import CanopyCore
import Foundation

extension SyncCore {
    /// Starts a connection attempt if the client should be online and is not connected. Queue only.
    func connect() {
        guard !isClosed, isOnline, phase == .idle else { return }
        generation += 1
        let attempt = generation
        phase = .connecting
        assembler = FrameAssembler()
        setConnectionState(.connecting)
        do {
            transport = try makeTransport(endpoint) { [weak self] event in
                guard let self else { return }
                self.queue.async { self.transportEvent(event, attempt: attempt) }
            }
        } catch {
            logger.warning("client.transport_failed", ["reason": "\(error)"])
            connectionLost()
            return
        }
        queue.asyncAfter(deadline: .now() + options.connectTimeout) { [weak self] in
            guard let self, self.generation == attempt, self.phase == .connecting else { return }
            self.logger.info("client.connect_timeout")
            self.connectionLost()
        }
    }

    private func transportEvent(_ event: TransportEvent, attempt: Int) {
        guard attempt == generation, phase != .idle else { return }
        lastTraffic = Date()
        lastReceived = lastTraffic
        switch event {
        case .opened:
            return  // the server speaks first (handshake)
        case .closed(let reason):
            logger.debug("client.connection_closed", ["reason": reason])
            connectionLost()
        case .text(let frame):
            do {
                guard let text = try assembler.feed(frame) else { return }
                received(try ServerMessage.parse(text))
            } catch {
                logger.warning("client.bad_message")
                connectionLost()
            }
        }
    }

    private func received(_ message: ServerMessage) {
        switch message {
        case .handshake(let timestamp, _):
            guard phase == .connecting else { return }
            if let timestamp {
                serverOffset.set(timestamp - SystemClock().nowMilliseconds())
                info["serverTimeOffset"] = .int(serverOffset.milliseconds)
            }
            phase = .connected
            connectedAt = Date()
            authFailures = 0
            restore()
            setInfo(connected: true)
            setConnectionState(.connected)
            scheduleKeepAlive(attempt: generation)
        case .control(let type, let payload):
            switch type {
            case "r":
                connectionLost(immediately: true)
            case "s":
                logger.warning("client.server_shutdown", ["reason": payload.stringValue ?? ""])
                connectionLost()
            default:
                return
            }
        case .reply(let request, let status, let data):
            replyHandlers.removeValue(forKey: request)?(.reply(status: status, data: data))
        case .push(let action, let body):
            handlePush(action, body)
        }
    }

    /// Sends a data request now (connected) and routes its reply to `handler`.
    func send(_ action: String, _ body: JSONValue, handler: @escaping (RequestOutcome) -> Void) {
        precondition(phase == .connected, "send requires a connection")
        let r = nextRequest
        nextRequest += 1
        replyHandlers[r] = handler
        let message: JSONValue = ["t": "d", "d": ["r": .int(r), "a": .string(action), "b": body]]
        for frame in WireFraming.frames(for: message.serialized()) { transport?.send(frame) }
        lastTraffic = Date()
    }

    /// Sends a request now when connected, otherwise after the next handshake.
    func request(_ action: String, _ body: JSONValue, handler: @escaping (RequestOutcome) -> Void) {
        if phase == .connected {
            send(action, body, handler: handler)
        } else {
            deferred.append((action, body, handler))
        }
    }

    /// The restore sequence after a handshake (Protocol.md#Restore-sequence): auth, listens, pending writes, deferred
    /// requests — pipelined; the server handles one connection's requests strictly in order.
    private func restore() {
        if let token { sendAuth(token) }
        for key in listens.keys { sendListen(key) }
        resendWrites()
        let queued = deferred
        deferred = []
        for item in queued { send(item.action, item.body, handler: item.handler) }
    }

    /// Tears the connection down and, unless offline or closed, schedules a reconnect. Queue only.
    func connectionLost(immediately: Bool = false) {
        guard phase != .idle else { return }
        let wasConnected = phase == .connected
        phase = .idle
        generation += 1
        transport?.close()
        transport = nil
        if let connectedAt { backoff.connectionEnded(afterSeconds: Date().timeIntervalSince(connectedAt)) }
        connectedAt = nil
        for key in listens.keys { listens[key]?.complete = false }
        let handlers = replyHandlers
        replyHandlers = [:]
        for (_, handler) in handlers.sorted(by: { $0.key < $1.key }) { handler(.disconnected) }
        if wasConnected { setInfo(connected: false) }
        guard !isClosed else { return }
        resumeWaitersOnHeldData()
        guard isOnline else {
            setConnectionState(.offline)
            return
        }
        setConnectionState(.disconnected)
        let delay = immediately ? 0 : backoff.nextDelay(random: Double.random(in: 0..<1))
        let attempt = generation
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, self.generation == attempt else { return }
            self.connect()
        }
    }

    /// Pings after `keepAliveInterval` without traffic (the server answers `o`, Protocol.md#Liveness) and
    /// replaces a connection that received nothing for twice that long: a dead Wi-Fi link may never report a
    /// TCP error.
    private func scheduleKeepAlive(attempt: Int) {
        let interval = options.keepAliveInterval
        queue.asyncAfter(deadline: .now() + interval / 2) { [weak self] in
            guard let self, self.generation == attempt, self.phase == .connected else { return }
            let now = Date()
            if now.timeIntervalSince(self.lastReceived) >= 2 * interval {
                self.logger.info("client.connection_dead")
                self.connectionLost(immediately: true)
                return
            }
            if now.timeIntervalSince(self.lastTraffic) >= interval {
                self.transport?.send(#"{"t":"c","d":{"t":"p","d":{}}}"#)
                self.lastTraffic = now
            }
            self.scheduleKeepAlive(attempt: attempt)
        }
    }

    func goOffline() {
        isOnline = false
        if phase == .idle {
            setConnectionState(.offline)
        } else {
            connectionLost()
        }
    }

    func goOnline() {
        guard !isOnline, !isClosed else { return }
        isOnline = true
        backoff.reset()
        connect()
    }

    // MARK: - auth

    func sendAuth(_ credential: String, completion: (@Sendable () -> Void)? = nil) {
        send("auth", ["cred": .string(credential)]) { [weak self] outcome in
            defer { completion?() }
            guard let self, case .reply(let status, let data) = outcome else { return }
            if status == "ok" {
                self.authFailures = 0
                self.scheduleTokenRefresh(expires: data["expires"]?.int64Value)
            } else {
                // The server keeps the socket and treats us as unauthenticated; a refresher may fix the token.
                self.logger.warning("client.auth_failed", ["status": status])
                self.authFailures += 1
                if self.authFailures <= 3 { self.refreshToken() }
            }
        }
    }

    /// Replaces the token; re-authenticates on the live socket. `completion` runs on the queue when done.
    func setToken(_ newToken: String?, completion: @escaping @Sendable () -> Void) {
        token = newToken
        refreshTimer?.cancel()
        guard phase == .connected else {
            completion()
            return
        }
        if let newToken {
            sendAuth(newToken, completion: completion)
        } else {
            send("unauth", [:]) { _ in completion() }
        }
    }

    private func scheduleTokenRefresh(expires: Int64?) {
        refreshTimer?.cancel()
        guard let expires, tokenRefresher != nil else { return }
        let remaining = Double(expires * 1000 - serverNow) / 1000
        let delay = max(0, remaining - min(60, remaining / 2))
        let work = DispatchWorkItem { [weak self] in self?.refreshToken() }
        refreshTimer = work
        queue.asyncAfter(deadline: .now() + delay, execute: work)
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
