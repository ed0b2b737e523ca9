// LongPollUpgrade -- moves a long-poll session onto a WebSocket the client opened for it (`/.ws?s=<handshake s>`).
//
// The SDK starts on long polling after a failed WebSocket attempt, then tries a WebSocket again as a secondary
// connection named by the handshake's `s`. The switch (Protocol.md#Long-polling; control messages `a` and `n`):
// 1. The server accepts the socket and sends the switch ack `a`; the client pings it until two pongs came back.
// 2. The client sends `a` on the socket and `n` (end of transmission) on the long poll, and from then on sends on
//    the socket. What it sends there is held until the long poll's `n` was handled, so requests keep their order.
// 3. On the long poll's `n` the server queues `n` there, behind everything the session sent so far, and retires
//    the long poll; the session writes to the socket from now on. The client reads the socket only after that `n`.
// If the socket closes first, the session simply stays on long polling.

import CanopyCore
import CanopyNet

/// One pending switch of a long-poll session to a WebSocket. Loop-confined.
final class LongPollUpgrade {
    let socket: WebSocketConnection
    private weak var connection: LongPollConnection?
    private var clientSwitched = false
    /// What the client sent on the socket after its `a`, held until the switch.
    private var held: [String] = []
    private var heldBytes = 0
    /// Most bytes held before the switch; beyond this the upgrade is abandoned.
    static let maxHeldBytes = 32 * 1024 * 1024

    init(socket: WebSocketConnection, connection: LongPollConnection) {
        self.socket = socket
        self.connection = connection
    }

    /// Starts the switch: answers pings and sends the switch ack.
    func begin() {
        socket.onText = { [weak self] text in self?.received(text) }
        socket.onClose = { [weak self] in self?.socketClosed() }
        socket.send(text: Wire.control(Wire.Control.switchAck).serialized())
    }

    private func received(_ text: String) {
        if !clientSwitched, let message = try? JSONValue.parse(text),
            message[Wire.Key.type]?.stringValue == Wire.MessageType.control
        {
            switch message[Wire.Key.data]?[Wire.Key.type]?.stringValue {
            case Wire.Control.ping: socket.send(text: Wire.control(Wire.Control.pong).serialized())
            case Wire.Control.switchAck: clientSwitched = true
            default: break
            }
            return
        }
        heldBytes += text.utf8.count
        guard heldBytes <= Self.maxHeldBytes else {
            socket.close(code: 1009, reason: "too much data before the transport switch")
            socketClosed()
            return
        }
        held.append(text)
    }

    /// The client ended transmission on the long poll: move the session to the socket.
    func complete() {
        guard let connection, let session = connection.session, !socket.isClosed else { return }
        connection.send(text: Wire.control(Wire.Control.endTransmission).serialized())
        connection.retire()
        session.switchTransport(to: socket)
        let pending = held
        held = []
        for text in pending { socket.onText?(text) }
    }

    /// The long-poll session ended before the switch: the socket has nothing to carry.
    func abandon() {
        guard !socket.isClosed else { return }
        socket.onText = nil
        socket.onClose = nil
        socket.close(code: 1000, reason: "")
    }

    private func socketClosed() {
        guard let connection, connection.upgrade === self else { return }
        connection.upgrade = nil
    }
}
