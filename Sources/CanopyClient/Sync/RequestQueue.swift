// RequestQueue -- the client's requests on the wire: numbers, reply handlers, deferred requests, held frames.
//
// A value that decides and never sends. A request made while connected gets the next number and its handler
// and comes back as frames to send now — or, while store operations submitted before it are not yet in the
// file, nothing: its frames wait, in order, until `committed` releases them (SyncCore+Writes says why). A
// request made while disconnected waits whole until the next handshake (`deferred`).

import CanopyCore

/// How a request ended.
enum RequestOutcome: Sendable {
    case reply(status: String, data: JSONValue)
    /// The connection dropped before the reply.
    case disconnected
}

/// A request waiting for a connection (onDisconnect registrations, transaction puts).
struct DeferredRequest {
    var action: String
    var body: JSONValue
    var handler: (RequestOutcome) -> Void
}

/// The requests of one client (confined to the sync queue with it).
struct RequestQueue {
    typealias Handler = (RequestOutcome) -> Void

    private var nextRequest: Int64 = 1
    private var handlers: [Int64: Handler] = [:]
    private var deferred: [DeferredRequest] = []
    /// Frames waiting for the store, each behind the ticket that was last submitted when it was made.
    private var held: [(ticket: Int64, frames: [String])] = []
    /// Store operations that gate the wire: submitted, and committed (or failed) so far.
    private var submitted: Int64 = 0
    private var committed: Int64 = 0

    /// Whether frames are waiting for the store.
    var isHolding: Bool { !held.isEmpty }

    /// A request on the live connection: returns the frames to send now (none while the store is behind).
    mutating func make(_ action: String, _ body: JSONValue, handler: @escaping Handler) -> [String] {
        let r = nextRequest
        nextRequest += 1
        handlers[r] = handler
        let message = Wire.request(r, action, body)
        let frames = WireFraming.frames(for: message.serialized())
        guard held.isEmpty && committed >= submitted else {
            held.append((submitted, frames))
            return []
        }
        return frames
    }

    /// A request for after the next handshake.
    mutating func deferUntilConnected(_ action: String, _ body: JSONValue, handler: @escaping Handler) {
        deferred.append(DeferredRequest(action: action, body: body, handler: handler))
    }

    /// The deferred requests, oldest first (they are made on the new connection).
    mutating func takeDeferred() -> [DeferredRequest] {
        defer { deferred = [] }
        return deferred
    }

    /// The handler of request `r` (nil when unknown or already answered).
    mutating func reply(_ r: Int64) -> Handler? { handlers.removeValue(forKey: r) }

    // MARK: - the store gate

    /// A store operation that requests made after it must wait for; returns its ticket.
    mutating func submitStoreOperation() -> Int64 {
        submitted += 1
        return submitted
    }

    /// The operation with `ticket` is done: returns the frames it releases, in order.
    mutating func storeCommitted(_ ticket: Int64) -> [String] {
        committed = max(committed, ticket)
        var frames: [String] = []
        while let first = held.first, first.ticket <= committed {
            held.removeFirst()
            frames += first.frames
        }
        return frames
    }

    // MARK: - endings

    /// The connection dropped: held frames are dropped, and the handlers of every request made on it are
    /// returned in request order (to be told `.disconnected`). Deferred requests stay.
    mutating func connectionLost() -> [Handler] {
        held = []
        defer { handlers = [:] }
        return handlers.sorted { $0.key < $1.key }.map(\.value)
    }

    /// The client closed: every handler, deferred ones last.
    mutating func close() -> [Handler] {
        let all = connectionLost() + deferred.map(\.handler)
        deferred = []
        return all
    }
}
