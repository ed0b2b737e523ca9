// WireEarlySession -- a WebSocket or long-poll session opened while its namespace loads: the handshake goes out at
// once, and the listens it asks for are answered from the file.
//
// A large namespace takes seconds to load (Architecture.md#Loading-a-namespace), and after a restart every
// attendee's app reconnects at once. Rather than hold the upgrade until the tree is in memory, the daemon
// upgrades, sends the handshake and keeps every frame the client sends, in order. Each listen that only auth and
// other listens precede is read from the file as a REST GET is (`NamespaceRegistry.readEarly`), decided by the
// saved rules against what was read (`CoveredRuleData`: a rule that looks elsewhere sends nothing), and its value
// pushed as the `d` the listen's join would send. Once the tree is loaded a `WireSession` takes the connection
// over and handles the kept frames as if they had just arrived: auth is answered, each listen joins its group and
// is acknowledged, and a listen whose value was sent and has not changed is not sent it again. Nothing is written,
// acknowledged or refused before the load: no write can commit while the tree loads, so the file holds exactly
// the state each early value was read from, and every later change reaches the listener as an ordinary update.

import CanopyCore
import CanopyNet

/// A WebSocket or long-poll session whose namespace is loading. Loop-confined.
final class WireEarlySession {
    unowned let hub: RealtimeHub
    let name: String
    let socket: any WireTransport
    /// Called with the session that takes the transport over, before it handles the kept frames (the long-poll
    /// endpoint links its connection to it).
    var onTakeover: ((WireSession) -> Void)?
    let host: String
    let handshakeID: String
    /// Frames received, in order, for the session that takes over.
    private var frames: [String] = []
    private var heldCharacters = 0
    /// Decodes the kept frames for the early answers (the session decodes them again).
    private var assembler = WireFrameAssembler(maxMessageBytes: WireSession.maxMessageCharacters * 4)
    /// Whom the requests so far make the client, for the early answers' rules.
    private var identity: Identity = .anonymous
    /// False once a request other than auth or a listen came: a later listen must see its effect, so it waits.
    private var answersEarly = true
    /// The hash of each value sent, by listen key.
    private var sent: [String: String] = [:]
    /// True once the connection closed or a session took it over: nothing more is sent from here.
    private(set) var isDone = false

    /// Frames kept at most while the namespace loads (and their bytes: one largest message); past either bound
    /// the connection closes (1008).
    static let maxFrames = 4096
    static let maxHeldCharacters = WireSession.maxMessageCharacters

    /// Requests that may come before a listen answered early: they change nothing a listen reads.
    private static let transparent: Set<String> = [
        Wire.Action.auth, Wire.Action.adminAuth, Wire.Action.unauth, Wire.Action.stats, Wire.Action.appCheck,
        Wire.Action.appCheckRemovedJS, Wire.Action.appCheckRemoved, Wire.Action.listen, Wire.Action.legacyListen,
    ]

    init(hub: RealtimeHub, name: String, socket: any WireTransport, host: String) {
        self.hub = hub
        self.name = name
        self.socket = socket
        self.host = host
        self.handshakeID = WireSession.sessionID()
    }

    /// Sends the handshake and starts keeping frames.
    func start() {
        socket.onText = { [weak self] text in self?.received(text) }
        socket.onClose = { [weak self] in self?.finish() }
        (socket as? WebSocketConnection)?.onBinary = { [weak self] _ in
            self?.end(code: 1003, reason: "binary messages are not supported")
        }
        let now = hub.context.configuration.clock.nowMilliseconds()
        send(WireSession.handshake(now: now, host: host, id: handshakeID))
    }

    private func received(_ text: String) {
        guard !isDone else { return }
        frames.append(text)
        heldCharacters += text.utf8.count
        guard frames.count <= Self.maxFrames, heldCharacters <= Self.maxHeldCharacters else {
            return end(code: 1008, reason: "too many messages while the database loads")
        }
        // Counted against the server's memory for incoming messages, as a session's reassembly is; the
        // transport closes itself when that is spent.
        guard socket.holdInbound(heldCharacters) else { return finish() }
        guard answersEarly else { return }
        // A frame the session will refuse (too big, malformed) is left to it; only whole requests are looked at.
        let message: String?
        do {
            message = try assembler.feed(text)
        } catch {
            answersEarly = false
            return
        }
        guard let message else { return }
        let action: String
        let body: JSONValue
        switch WireInbound.decode(message) {
        case .request(let requested, _, let requestBody)? where Self.transparent.contains(requested):
            action = requested
            body = requestBody
        case .control?, .ignored?: return
        default:
            answersEarly = false
            return
        }
        switch action {
        case Wire.Action.auth, Wire.Action.adminAuth:
            // As the session will decide it: a refused credential leaves the identity as it was.
            guard let credential = body[Wire.Key.credential]?.stringValue,
                let identity = try? WireSession.identity(credential: credential, body, hub.context.credentials, name)
            else { return }
            self.identity = identity
        case Wire.Action.unauth: identity = .anonymous
        case Wire.Action.listen, Wire.Action.legacyListen: listen(body)
        default: break
        }
    }

    /// Reads the listen's location from the file and pushes its value, if the rules decide it from what was read.
    private func listen(_ body: JSONValue) {
        guard let text = body[Wire.Key.path]?.stringValue, let path = try? Path(parsing: text) else { return }
        var query: QuerySpec?
        if let value = body[Wire.Key.query], case .object(let members) = value, !members.isEmpty {
            guard let spec = try? QuerySpec.fromWire(value) else { return }
            query = spec.loadsAllData ? nil : spec
        }
        let tag = body[Wire.Key.tag]?.int64Value
        let clientHash = body[Wire.Key.hash]?.stringValue
        let identity = self.identity
        let registry = hub.context.registry
        registry.readEarly(name, at: path, shallow: false) { [weak self] tree in
            guard let self, let tree, !self.isDone, registry.open[self.name] == nil else { return }
            let now = self.hub.context.configuration.clock.nowMilliseconds()
            // Refused, or decided by data not read: the session answers once the tree is loaded.
            guard case .value(let value)? = tree.listenStart(at: path, query: query, as: identity, in: self.name, now: now)
            else { return }
            self.sent[WireSession.listenKey(path, tag)] = value.hash
            if clientHash == nil || clientHash != value.hash || value.isEmpty {
                let messages = WireMessages(closing: WireMessages.dataMessagePrefixes([.set(path: path, value: value)]), tag: tag)
                registry.metrics.wireMessagesSent &+= messages.texts.count
                self.socket.send(messages)
            }
            registry.metrics.countEarlyRead()
        }
    }

    /// The load ended: a session takes the connection over, or it closes with the load's error.
    func opened(_ result: Result<Namespace?, any Error>) {
        guard !isDone else { return }
        finish()
        let namespace: Namespace
        do {
            _ = try result.get()
            namespace = try hub.context.namespace(name, whileRulesFail: true)
        } catch {
            // 1011: the server cannot serve the request now; the SDKs reconnect with their backoff.
            let message = (error as? any CanopyError)?.userMessage
            socket.close(code: 1011, reason: String((message ?? "the database could not be opened").prefix(120)))
            return
        }
        let session = WireSession(hub: hub, namespace: namespace, socket: socket)
        hub.sessionOpened(session)
        onTakeover?(session)
        onTakeover = nil
        session.resume(host: host, handshakeID: handshakeID, messages: frames, sentWhileLoading: sent)
    }

    /// The daemon is draining: tells the client to reconnect (as `WireSession.drain` does) and closes.
    func drain() {
        guard !isDone else { return }
        send(Wire.control(Wire.Control.reset, .string(host)))
        end(code: 1001, reason: "server restarting; reconnect")
    }

    private func end(code: UInt16, reason: String) {
        socket.close(code: code, reason: reason)
        finish()
    }

    private func finish() {
        isDone = true
        socket.onText = nil
        socket.onClose = nil
        (socket as? WebSocketConnection)?.onBinary = nil
        hub.earlySessionEnded(self)
    }

    private func send(_ message: JSONValue) {
        var bytes: [UInt8] = []
        message.write(into: &bytes)
        hub.context.registry.metrics.wireMessagesSent &+= 1
        socket.send(WireMessages(texts: [bytes]))
    }
}
