// WireSession -- one Firebase Realtime Database wire-protocol (v5) connection over a WebSocket or long polling.
//
// Envelopes (Protocol.md#Wire-protocol): control `{"t":"c","d":{"t":<type>,"d":…}}`, data requests
// `{"t":"d","d":{"r":<n>,"a":<action>,"b":{…}}}`, responses `{"t":"d","d":{"r":<n>,"b":{"s":<status>,"d":…}}}`,
// pushes `{"t":"d","d":{"a":"d"|"m"|"c"|"ac","b":{…}}}` (`m`: an update, its children by relative path); the
// names are `Wire`'s (CanopyCore's WireProtocol.swift).
// Messages longer than 16384 characters travel as a bare piece count followed by the pieces. A connection's
// requests are handled strictly in order: writes and reads wait for durability through their namespace, and
// replies are sent in request order.

import CanopyCore
import CanopyNet

/// One listen of a session, as a member of a shared `ListenGroup`.
///
/// The fan-out touches `session` once per delivered event, so it is held without reference counting (a weak
/// reference costs a side-table lookup and atomic operations per event). It is safe because a listen leaves its
/// group, and `isActive` turns false, before its session can go away: `WireSession.drop` does both, and the
/// session's `deinit` drops whatever listens remain. Readers check `isActive` first.
final class WireListen: SlotListMember {
    unowned(unsafe) let session: WireSession
    /// False once the listen has left its group; `session` must not be touched then.
    var isActive = true
    let tag: Int64?
    let group: ListenGroup
    /// Its index in `group.wire`.
    var slot = 0
    init(session: WireSession, tag: Int64?, group: ListenGroup) {
        self.session = session
        self.tag = tag
        self.group = group
    }
}

/// A queued onDisconnect operation.
struct DisconnectOperation {
    enum Kind { case put, merge }
    var kind: Kind
    var path: Path
    var data: JSONValue
    var identity: Identity
    /// Its number in its session (to take back one a replica could not store).
    var serial = 0
    /// Runs once it was performed (or refused): a replica then forgets the stored copy.
    var done: (() -> Void)?

    init(kind: Kind, path: Path, data: JSONValue, identity: Identity) {
        self.kind = kind
        self.path = path
        self.data = data
        self.identity = identity
    }

    /// The write it performs.
    var write: WriteOperation {
        switch kind {
        case .put: .set(path: path, data: data)
        case .merge: .update(path: path, data: data)
        }
    }
}

/// What a `WireSession` reads frames from and writes frames to: a WebSocket, or a long-poll connection
/// (`LongPollConnection`). Loop-confined. `onClose` fires when the peer or the server ends the transport.
protocol WireTransport: AnyObject {
    var onText: ((String) -> Void)? { get set }
    var onClose: (() -> Void)? { get set }
    func send(text: String)
    /// Sends messages serialized (and framed) once for many sessions; see `WireMessages`.
    func send(_ messages: WireMessages)
    /// Sends a reply to the client's request (a WebSocket writes it with the loop pass's answers).
    func sendAnswer(_ messages: WireMessages)
    func close(code: UInt16, reason: String)
    /// The session holds `bytes` of a message it reassembles from counted pieces; false when the transport
    /// closed for it (the server's memory for incoming messages is spent).
    func holdInbound(_ bytes: Int) -> Bool
}

extension WireTransport {
    func holdInbound(_ bytes: Int) -> Bool { true }
}

/// Loop-confined protocol session.
final class WireSession {
    unowned let hub: RealtimeHub
    let namespace: Namespace
    private(set) var socket: any WireTransport
    /// The `s` of this session's handshake, which a long-poll client names when it upgrades to a WebSocket.
    private(set) var handshakeID = ""
    /// Called when the client ends transmission on its current transport (`n`, long polling → WebSocket upgrade).
    var onEndTransmission: (() -> Void)?
    /// Connected, authenticated or closed; see `WireSessionStateMachine`.
    private var machine = WireSessionStateMachine()
    var identity: Identity { machine.identity }
    /// Whether the client has authenticated (an admin or a user; not anonymous).
    var isAuthenticated: Bool {
        if case .anonymous = identity { return false }
        return true
    }
    private var listens: [String: WireListen] = [:]
    /// Listens requested and not yet joined or failed; they count against the limits (`listenLimitRefusal`).
    private var listenReservations = 0
    private var onDisconnect: [DisconnectOperation] = []
    private var disconnectSerial = 0
    private var expiry: TimerHandle?
    private let logger = Logger(label: "canopy.wire")
    /// Largest serialized message a client may send (16 MB write limit plus envelope).
    static let maxMessageCharacters = 17 * 1024 * 1024
    /// Joins the client's counted pieces; at most 4 UTF-8 bytes per character of the limit.
    private var assembler = WireFrameAssembler(maxMessageBytes: WireSession.maxMessageCharacters * 4)
    /// Whether the current transport is a WebSocket (else long polling), for `canopy_messages_sent_total`.
    private(set) var isWebSocket = false
    /// The host the client connected to (the handshake's `h`); a drain's reset names it.
    private var host = ""
    /// Where sent messages are counted (the registry's).
    private let metrics: ServerMetrics

    init(hub: RealtimeHub, namespace: Namespace, socket: any WireTransport) {
        self.hub = hub
        self.namespace = namespace
        self.socket = socket
        self.metrics = hub.context.registry.metrics
    }

    deinit {
        // Listens hold this session unowned: none may stay in a group once it is gone (see `WireListen`). The hub
        // is not touched here (it may be going away itself); an emptied group is only a little memory.
        for listen in listens.values {
            listen.isActive = false
            listen.group.wire.remove(listen)
        }
    }

    /// The hash of each listen's value sent while the namespace loaded, by listen key, until the listen joins.
    private var sentWhileLoading: [String: String] = [:]

    /// Takes over a connection whose handshake went out while the namespace loaded (`WireEarlySession`): handles
    /// the messages that came meanwhile, in order, knowing which values were sent already.
    func resume(host: String, handshakeID: String, messages: [String], sentWhileLoading: [String: String]) {
        self.host = host
        self.handshakeID = handshakeID
        self.sentWhileLoading = sentWhileLoading
        attach(socket)
        for message in messages {
            guard !machine.isClosed else { return }
            handleMessage(message)
        }
    }

    /// Sends the handshake and starts reading.
    func start(host: String) {
        self.host = host
        attach(socket)
        handshakeID = Self.sessionID()
        send(Self.handshake(now: hub.context.configuration.clock.nowMilliseconds(), host: host, id: handshakeID))
    }

    /// The server's first message: its time, the protocol version, the host and the session's id.
    static func handshake(now: Int64, host: String, id: String) -> JSONValue {
        Wire.control(
            Wire.Control.handshake,
            [
                Wire.Handshake.timestamp: .int(now), Wire.Handshake.version: .string(Wire.version),
                Wire.Handshake.host: .string(host), Wire.Handshake.session: .string(id),
            ])
    }

    // MARK: - receiving

    private func received(_ text: String) {
        // A bare "0" (the client keep-alive) yields no message.
        do {
            let message = try assembler.feed(text)
            guard socket.holdInbound(assembler.bufferedByteCount) else { return }
            guard let message else { return }
            handleMessage(message)
        } catch {
            end(code: 1009, reason: "message too big")
        }
    }

    private func handleMessage(_ text: String) {
        switch WireInbound.decode(text) {
        case nil:
            logger.debug("wire.bad_message")
            end(code: 1002, reason: "malformed message")
        case .control(let control):
            if control == Wire.Control.ping { send(Wire.control(Wire.Control.pong)) }
            if control == Wire.Control.endTransmission { onEndTransmission?() }
        case .request(let action, let request, let body):
            handle(action: action, request: request, body: body)
        case .ignored:
            break
        }
    }

    private func handle(action: String, request r: Int64?, body: JSONValue) {
        logger.trace(
            "wire.request",
            ["action": action, "r": r.map(String.init) ?? "-", "path": body[Wire.Key.path]?.stringValue ?? "-"])
        if let failure = namespace.rulesFailure, Self.dataActions.contains(action) {
            // The namespace's saved rules cannot be loaded: no data in or out until an admin replaces them. (The
            // SDKs report `unavailable` as an error of the listen or write.)
            reply(r, Wire.Status.unavailable, failure)
            return
        }
        // A token past its revocation time is revoked before this request is served, even if its timer has not
        // run yet in this loop pass: nothing is read, written or acknowledged under it.
        if let revokedAt = machine.revokedAt, hub.context.configuration.clock.nowMilliseconds() >= revokedAt {
            tokenExpired()
        }
        switch action {
        case Wire.Action.stats, Wire.Action.appCheck, Wire.Action.appCheckRemovedJS, Wire.Action.appCheckRemoved:
            reply(r, Wire.Status.ok, "")
        case Wire.Action.auth, Wire.Action.adminAuth: authenticate(r, body)
        case Wire.Action.unauth:
            setIdentity(.anonymous, expiresAt: nil)
            reply(r, Wire.Status.ok, "")
        case Wire.Action.listen, Wire.Action.legacyListen: listen(r, body)
        case Wire.Action.unlisten, Wire.Action.legacyUnlisten: unlisten(r, body)
        case Wire.Action.get: get(r, body)
        case Wire.Action.put: put(r, body)
        case Wire.Action.merge: merge(r, body)
        case Wire.Action.onDisconnectPut: queueDisconnect(r, body, kind: .put)
        case Wire.Action.onDisconnectMerge: queueDisconnect(r, body, kind: .merge)
        case Wire.Action.onDisconnectCancel: cancelDisconnect(r, body)
        default: reply(r, Wire.Status.failure, "Unknown action '\(action)'.")
        }
    }

    /// The actions that read or write data (listens, gets, writes, onDisconnect operations).
    private static let dataActions: Set<String> = [
        Wire.Action.listen, Wire.Action.legacyListen, Wire.Action.get, Wire.Action.put, Wire.Action.merge,
        Wire.Action.onDisconnectPut, Wire.Action.onDisconnectMerge,
    ]

    // MARK: - auth

    private func authenticate(_ r: Int64?, _ body: JSONValue) {
        guard let credential = body[Wire.Key.credential]?.stringValue else {
            reply(r, Wire.Status.invalidToken, "Missing credential.")
            return
        }
        let newIdentity: Identity
        do {
            newIdentity = try Self.identity(credential: credential, body, hub.context.credentials, namespace.name)
        } catch {
            let expired = error.userMessage.lowercased().contains("expired")
            reply(r, expired ? Wire.Status.expiredToken : Wire.Status.invalidToken, error.userMessage)
            return
        }
        var expires: Int64?
        if case .user(_, let at?) = newIdentity { expires = at }
        setIdentity(newIdentity, expiresAt: expires)
        var answer: [JSONMember] = [JSONMember("auth", newIdentity.isAdmin ? ["admin": true] : newIdentity.rulesAuth)]
        if let expires { answer.append(JSONMember("expires", .int(expires / 1000))) }
        reply(r, Wire.Status.ok, .object(answer))
    }

    /// Who an `auth` (or `gauth`) request with `credential` makes the session: an admin credential may ask to
    /// act as nobody (`noauth`) or as given claims (`authvar`).
    static func identity(
        credential: String, _ body: JSONValue, _ credentials: Credentials, _ namespace: String
    ) throws(CredentialError) -> Identity {
        let identity = try credentials.identify(credential: credential, namespace: namespace)
        guard identity.isAdmin else { return identity }
        if body[Wire.Key.noAuth]?.boolValue == true { return .anonymous }
        if let authvar = body[Wire.Key.authOverride], case .object = authvar { return .user(auth: authvar, expiresAt: nil) }
        return identity
    }

    private func setIdentity(_ newIdentity: Identity, expiresAt: Int64?) {
        let revocation = expiresAt.map(hub.context.credentials.revocationTime)
        guard let action = machine.identityChanged(to: newIdentity, revokedAt: revocation) else { return }
        expiry?.cancel()
        expiry = nil
        if case .arm(let revokedAt) = action {
            // Saturating: `exp` is the client's number, as far from now as Int64 allows. The revocation time is
            // wall-clock time; the timer runs on the loop's monotonic clock.
            let delay = revokedAt.subtractingSaturated(hub.context.configuration.clock.nowMilliseconds())
            expiry = hub.loop.schedule(afterMilliseconds: delay) { [weak self] in self?.tokenExpired() }
        }
        recheckListens()
    }

    private func tokenExpired() {
        expiry?.cancel()
        expiry = nil
        guard machine.tokenExpired() else { return }
        push(
            Wire.Push.authRevoked,
            [Wire.Key.status: .string(Wire.Status.expiredToken), Wire.Key.data: "Auth token is expired."])
        recheckListens()
    }

    /// Cancels (with a `c` push) every listen the current identity may no longer read.
    func recheckListens() {
        for (key, listen) in listens
        where !hub.allowed(identity, read: listen.group.path, query: listen.group.query, in: namespace) {
            var body: [JSONMember] = [JSONMember(Wire.Key.path, .string(listen.group.path.description))]
            if let query = listen.group.query { body.append(JSONMember(Wire.Key.query, [query.wireObject()])) }
            push(Wire.Push.listenRevoked, .object(body))
            drop(key)
        }
    }

    // MARK: - listens

    private func listen(_ r: Int64?, _ body: JSONValue) {
        guard let path = parsePath(body[Wire.Key.path], r), let spec = parseQuery(body[Wire.Key.query], r) else {
            return
        }
        let query = spec?.loadsAllData == true ? nil : spec
        let tag = body[Wire.Key.tag]?.int64Value
        let key = Self.listenKey(path, tag)
        // A listen that replaces one of the same key takes its place; a new one needs a slot, held from now until
        // it joins or fails, so listens in flight count too.
        let reserved = listens[key] == nil
        if reserved {
            if let refusal = listenLimitRefusal() {
                reply(r, Wire.Status.unavailable, refusal)
                return
            }
            listenReservations += 1
            hub.listenCount += 1
        }
        guard hub.allowed(identity, read: path, query: query, in: namespace) else {
            if reserved { releaseListenReservation() }
            reply(r, Wire.Status.permissionDenied, "Permission denied")
            return
        }
        let clientHash = body[Wire.Key.hash]?.stringValue
        // Sent once everything written before this request is durable, from the tree the group's listeners were
        // last told of (later batches may have been fanned out meanwhile; see `Namespace.shownRoot`).
        namespace.whenDurable { [weak self] _ in
            // A closed session has given its reservations back (`socketClosed`).
            guard let self, !self.machine.isClosed else { return }
            // Checked again: the auth (`unauth`, a new token, expiry) or the rules may have changed meanwhile, and
            // `recheckListens` only sees listens that have joined.
            guard self.hub.allowed(self.identity, read: path, query: query, in: self.namespace) else {
                if reserved { self.releaseListenReservation() }
                self.reply(r, Wire.Status.permissionDenied, "Permission denied")
                return
            }
            self.drop(key)
            // The reservation becomes the listen; without one (it replaced a listen that has left meanwhile), the
            // listen is counted now.
            if reserved { self.listenReservations -= 1 } else { self.hub.listenCount += 1 }
            let group = self.hub.group(namespace: self.namespace, path: path, query: query)
            let listen = WireListen(session: self, tag: tag, group: group)
            group.wire.add(listen)
            self.listens[key] = listen
            let value = group.currentValue(in: self.namespace.shownRoot)
            // A value sent while the namespace loaded (`WireEarlySession`) is not sent again when it still holds.
            let sentEarly = self.sentWhileLoading.removeValue(forKey: key)
            if sentEarly != value.hash, clientHash == nil || clientHash != value.hash || value.isEmpty {
                self.push(WireMessages.dataMessagePrefixes([.set(path: path, value: value)]), tag: tag)
            }
            let unindexed = self.namespace.policy.isUnindexed(query, at: path)
            self.reply(r, Wire.Status.ok, unindexed ? [Wire.Key.warnings: [.string(Wire.Warning.noIndex)]] : [:])
        }
    }

    /// Why a new listen is refused (its reply's text), or nil when this connection and the server have room.
    private func listenLimitRefusal() -> String? {
        let limit = hub.context.configuration.maxListensPerConnection
        if listens.count + listenReservations >= limit {
            return "Too many listens on this connection (at most \(limit)); unlisten some first."
        }
        let total = hub.context.configuration.maxListens
        if hub.listenCount >= total { return "Too many listens on this server (at most \(total)); try again later." }
        return nil
    }

    /// Why a new onDisconnect operation is refused (its reply's text), or nil when this connection and the server
    /// have room.
    private func onDisconnectLimitRefusal() -> String? {
        let limit = hub.context.configuration.maxOnDisconnectPerConnection
        if onDisconnect.count >= limit {
            return "Too many onDisconnect operations on this connection (at most \(limit)); cancel some first."
        }
        let total = hub.context.configuration.maxOnDisconnectOperations
        if hub.onDisconnectCount >= total {
            return "Too many onDisconnect operations on this server (at most \(total)); try again later."
        }
        return nil
    }

    private func releaseListenReservation() {
        listenReservations -= 1
        hub.listenCount -= 1
    }

    private func unlisten(_ r: Int64?, _ body: JSONValue) {
        guard let path = parsePath(body[Wire.Key.path], r) else { return }
        let key = Self.listenKey(path, body[Wire.Key.tag]?.int64Value)
        // After the listens sent before it have joined (they wait for durability too), so it cannot miss one.
        namespace.whenDurable { [weak self] _ in
            guard let self, !self.machine.isClosed else { return }
            self.drop(key)
            self.reply(r, Wire.Status.ok, "")
        }
    }

    private func drop(_ key: String) {
        guard let listen = listens.removeValue(forKey: key) else { return }
        hub.listenCount -= 1
        listen.isActive = false
        listen.group.wire.remove(listen)
        hub.release(listen.group)
    }

    static func listenKey(_ path: Path, _ tag: Int64?) -> String {
        "\(path)\u{0}\(tag.map(String.init) ?? "")"
    }

    private func get(_ r: Int64?, _ body: JSONValue) {
        // An invalid query fails as it does for a listen: never answered with the unfiltered data.
        guard let path = parsePath(body[Wire.Key.path], r), let query = parseQuery(body[Wire.Key.query], r) else {
            return
        }
        guard hub.allowed(identity, read: path, query: query, in: namespace) else {
            reply(r, Wire.Status.permissionDenied, "Permission denied")
            return
        }
        let node = namespace.root.node(at: path)
        namespace.whenDurable { [weak self] _ in
            let value = query.map { $0.window(of: node) } ?? node
            self?.reply(r, Wire.Status.ok, value.json(export: true))
        }
    }

    // MARK: - writes

    private func put(_ r: Int64?, _ body: JSONValue) {
        guard let path = parsePath(body[Wire.Key.path], r, allowPriority: true) else { return }
        // A transaction's `h`: the hash of the data the client computed from.
        let condition = body[Wire.Key.hash]?.stringValue.map { WriteCondition.hash($0, at: path) }
        perform(r, .set(path: path, data: body[Wire.Key.data] ?? .null), condition: condition)
    }

    private func merge(_ r: Int64?, _ body: JSONValue) {
        guard let path = parsePath(body[Wire.Key.path], r) else { return }
        perform(r, .update(path: path, data: body[Wire.Key.data] ?? .null), condition: nil)
    }

    /// Performs a write through the namespace's pipeline and replies to request `r` once it is durable.
    private func perform(_ r: Int64?, _ operation: WriteOperation, condition: WriteCondition?) {
        namespace.perform(operation, as: identity, now: now, condition: condition) { [weak self] result in
            switch result {
            case .success: self?.reply(r, Wire.Status.ok, "")
            case .failure(let error): self?.reply(r, error.wireStatus, error.wireMessage)
            }
        }
    }

    private var now: Int64 { hub.context.configuration.clock.nowMilliseconds() }

    // MARK: - onDisconnect

    /// Queues an onDisconnect operation once the pipeline would perform it now (valid data, allowed by the rules),
    /// and while this connection and the server have room for it.
    private func queueDisconnect(_ r: Int64?, _ body: JSONValue, kind: DisconnectOperation.Kind) {
        guard let path = parsePath(body[Wire.Key.path], r, allowPriority: kind == .put) else { return }
        if let refusal = onDisconnectLimitRefusal() {
            reply(r, Wire.Status.unavailable, refusal)
            return
        }
        var op = DisconnectOperation(kind: kind, path: path, data: body[Wire.Key.data] ?? .null, identity: identity)
        if let error = namespace.check(op.write, as: identity, now: now) {
            reply(r, error.wireStatus, error.wireMessage)
            return
        }
        disconnectSerial += 1
        op.serial = disconnectSerial
        onDisconnect.append(op)
        hub.onDisconnectCount += 1
        guard let store = namespace.disconnectStore else { return reply(r, Wire.Status.ok, "") }
        // At a replica: acknowledged once stored in NATS, where the owner finds it if this process dies.
        let serial = op.serial
        store.save(session: handshakeID, onDisconnect) { [weak self] stored in
            guard let self else { return }
            if stored { return self.reply(r, Wire.Status.ok, "") }
            let before = self.onDisconnect.count
            self.onDisconnect.removeAll { $0.serial == serial }
            self.hub.onDisconnectCount -= before - self.onDisconnect.count
            self.reply(r, Wire.Status.unavailable, "The onDisconnect operation could not be stored in the cluster; try again.")
        }
    }

    private func cancelDisconnect(_ r: Int64?, _ body: JSONValue) {
        guard let path = parsePath(body[Wire.Key.path], r) else { return }
        let before = onDisconnect.count
        onDisconnect.removeAll { path.isAncestorOrSelf(of: $0.path) }
        hub.onDisconnectCount -= before - onDisconnect.count
        guard let store = namespace.disconnectStore, onDisconnect.count < before else {
            return reply(r, Wire.Status.ok, "")
        }
        // Cancelled here at once; if the stored copy cannot be updated, the owner may still perform it should
        // this process die (the reply says so).
        store.save(session: handshakeID, onDisconnect) { [weak self] stored in
            self?.reply(
                r, stored ? Wire.Status.ok : Wire.Status.unavailable,
                stored ? "" : "Cancelled on this node, but the cluster's copy could not be updated.")
        }
    }

    /// The session ends the connection itself. A WebSocket does not report a close its owner asked for, so the
    /// session cleans up here as for a lost connection: onDisconnect operations run, listens leave their groups
    /// (no more fan-out to a closed socket), and the hub forgets the session.
    /// The daemon is draining: tells the client to reconnect with a reset (`{"t":"c","d":{"t":"r","d":<host>}}`,
    /// the host it connected to, which a load balancer maps to another instance), then ends the session (its
    /// onDisconnect operations run, as for any lost connection). The Firebase JS SDK handles the reset by closing
    /// and reconnecting with its usual backoff; a shutdown (`s`) would instead stop it reconnecting at all.
    func drain() {
        guard !machine.isClosed else { return }
        send(Wire.control(Wire.Control.reset, .string(host)))
        end(code: 1001, reason: "server restarting; reconnect")
    }

    private func end(code: UInt16, reason: String) {
        socket.close(code: code, reason: reason)
        socketClosed()
    }

    /// Moves the session to `transport` (a long-poll session upgraded to a WebSocket). The old transport's callbacks
    /// are cleared, so retiring it runs no onDisconnect; everything sent from now on goes out on `transport`.
    func switchTransport(to transport: any WireTransport) {
        guard !machine.isClosed else { return }
        socket.onText = nil
        socket.onClose = nil
        socket = transport
        attach(transport)
    }

    private func attach(_ transport: any WireTransport) {
        isWebSocket = transport is WebSocketConnection
        transport.onText = { [weak self] text in self?.received(text) }
        transport.onClose = { [weak self] in self?.socketClosed() }
        // The protocol is JSON text: a binary message is refused with 1003 (unsupported data), not ignored.
        (transport as? WebSocketConnection)?.onBinary = { [weak self] _ in
            self?.end(code: 1003, reason: "binary messages are not supported")
        }
    }

    private func socketClosed() {
        guard machine.transportClosed() else { return }
        expiry?.cancel()
        expiry = nil
        // Run by the hub in order, a bounded number per loop pass (see `RealtimeHub.runDisconnectOperations`).
        var operations = onDisconnect
        onDisconnect = []
        if let store = namespace.disconnectStore, !operations.isEmpty {
            // At a replica: the stored copy is removed once every operation was performed (or refused).
            let session = handshakeID
            operations.whenAllDone { store.remove(session: session) }
        }
        hub.runDisconnectOperations(operations, in: namespace)
        hub.listenCount -= listenReservations
        listenReservations = 0
        for key in Array(listens.keys) { drop(key) }
        hub.sessionClosed(self)
    }

    // MARK: - sending

    private func parsePath(_ value: JSONValue?, _ r: Int64?, allowPriority: Bool = false) -> Path? {
        guard let text = value?.stringValue else {
            reply(r, Wire.Status.failure, "Missing path.")
            return nil
        }
        do {
            return try Path(parsing: text, allowPriorityLeaf: allowPriority)
        } catch {
            reply(r, Wire.Status.failure, error.userMessage)
            return nil
        }
    }

    /// The query of a listen or get: `.some(nil)` for none (absent or `{}`), nil after replying with a failure
    /// when it is invalid.
    private func parseQuery(_ value: JSONValue?, _ r: Int64?) -> QuerySpec?? {
        guard let value, case .object(let members) = value, !members.isEmpty else { return .some(nil) }
        do {
            return .some(try QuerySpec.fromWire(value))
        } catch {
            reply(r, Wire.Status.failure, error.userMessage)
            return nil
        }
    }

    private func reply(_ r: Int64?, _ status: String, _ message: String) {
        guard let r else { return }
        // The common replies (`ok` with an empty message) are written straight to bytes, without a JSONValue.
        var bytes = Self.replyOpening
        bytes += Array(String(r).utf8)
        bytes += Self.replyStatus
        JSONValue.string(status).write(into: &bytes)
        bytes += Self.replyData
        JSONValue.string(message).write(into: &bytes)
        bytes += Array("}}}".utf8)
        sendMessage(bytes, answering: true)
    }

    /// The fixed parts of a reply, `{"t":"d","d":{"r":` <n> `,"b":{"s":` <status> `,"d":` <message> `}}}`.
    private static let replyOpening = Array(
        #"{"\#(Wire.Key.type)":"\#(Wire.MessageType.data)","\#(Wire.Key.data)":{"\#(Wire.Key.request)":"#.utf8)
    private static let replyStatus = Array(#","\#(Wire.Key.body)":{"\#(Wire.Key.status)":"#.utf8)
    private static let replyData = Wire.memberSeparator(Wire.Key.data)

    private func reply(_ r: Int64?, _ status: String, _ data: JSONValue) {
        guard let r else { return }
        send(Wire.response(r, status, data), answering: true)
    }

    private func push(_ action: String, _ body: JSONValue) {
        send(Wire.push(action, body))
    }

    private func send(_ message: JSONValue, answering: Bool = false) {
        var bytes: [UInt8] = []
        message.write(into: &bytes)
        sendMessage(bytes, answering: answering)
    }

    /// Pushes precomputed `d` messages (from `WireMessages.dataMessagePrefixes`), closed with this listen's tag.
    func push(_ prefixes: [[UInt8]], tag: Int64?) {
        send(WireMessages(closing: prefixes, tag: tag))
    }

    /// Sends messages encoded once for every session of a listen group.
    ///
    /// The fan-out calls this without retaining the session (see `WireListen`). A transport may end the session
    /// while sending (a long poll's outbox overflows), which can release it: nothing may touch `self` after the
    /// send.
    /// - Parameter answering: the messages reply to the client's request (`WireTransport.sendAnswer`).
    func send(_ messages: WireMessages, answering: Bool = false) {
        guard !machine.isClosed else { return }
        if isWebSocket {
            metrics.wireMessagesSent &+= messages.texts.count
        } else {
            metrics.longPollMessagesSent &+= messages.texts.count
        }
        if answering { socket.sendAnswer(messages) } else { socket.send(messages) }
    }

    /// Sends one serialized message.
    private func sendMessage(_ message: [UInt8], answering: Bool = false) {
        send(WireMessages(texts: [message]), answering: answering)
    }

    static func sessionID() -> String { RandomToken.alphanumeric(32) }
}

extension [DisconnectOperation] {
    /// Runs `body` once every operation was performed (or refused). Loop-confined.
    mutating func whenAllDone(_ body: @escaping () -> Void) {
        let left = Countdown(count, body)
        for index in indices { self[index].done = { left.tick() } }
    }
}

/// Runs `body` after `count` ticks (loop-confined).
final class Countdown {
    private var left: Int
    private let body: () -> Void
    init(_ count: Int, _ body: @escaping () -> Void) {
        left = count
        self.body = body
    }
    func tick() {
        left -= 1
        if left == 0 { body() }
    }
}
