// WireSessionStateMachine -- the phases of a wire-protocol session: connected, authenticated (with or without an
// expiry), closed. Events in, what to do out; no I/O.
//
//   connected ──auth/gauth accepted──▶ authenticated(expiresAt) ──unauth──▶ connected
//   authenticated(revokedAt: t) ──expiry timer fires, or a request arrives at t or later──▶ connected (an `ac` push; listens rechecked as anonymous)
//   any ──transport closed / the session ends it──▶ closed (onDisconnect operations run once, listens dropped)
// The expiry timer runs on the loop's clock; a timer that fires after the credential it was armed for was replaced,
// or after the session closed, does nothing. `WireSession` performs what these events return.

/// The authentication phase and lifetime of one `WireSession`.
struct WireSessionStateMachine {
    enum State {
        /// No credential: the session acts as `.anonymous`.
        case connected
        /// A credential was accepted; `revokedAt` is when it stops being honoured (its `exp` plus the skew, in
        /// wall-clock milliseconds; `Credentials.revocationTime`), nil if never.
        case authenticated(Identity, revokedAt: Int64?)
        case closed
    }

    /// What a change of identity requires of the expiry timer (listens are rechecked either way).
    enum ExpiryAction: Equatable {
        /// Cancel the timer of the previous credential, if any.
        case cancel
        /// Cancel the previous timer and arm one for this credential's revocation time.
        case arm(revokedAt: Int64)
    }

    private(set) var state = State.connected

    /// Who the session acts as.
    var identity: Identity {
        if case .authenticated(let identity, _) = state { return identity }
        return .anonymous
    }

    /// When the current credential stops being honoured, if it ever does.
    var revokedAt: Int64? {
        if case .authenticated(_, let revokedAt) = state { return revokedAt }
        return nil
    }

    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// A credential was accepted (`revokedAt` when it stops being honoured), or `unauth` asked for `.anonymous`.
    /// - Returns: what to do with the expiry timer, or nil when the session is closed (nothing changes).
    mutating func identityChanged(to identity: Identity, revokedAt: Int64?) -> ExpiryAction? {
        guard !isClosed else { return nil }
        if case .anonymous = identity, revokedAt == nil {
            state = .connected
        } else {
            state = .authenticated(identity, revokedAt: revokedAt)
        }
        return revokedAt.map { .arm(revokedAt: $0) } ?? .cancel
    }

    /// The expiry timer fired, or a request arrived after the revocation time.
    /// - Returns: true when the credential it was armed for has expired: push `ac` and recheck the listens.
    mutating func tokenExpired() -> Bool {
        guard case .authenticated(_, revokedAt: .some) = state else { return false }
        state = .connected
        return true
    }

    /// The transport closed, or the session ended it.
    /// - Returns: true the first time: cancel the expiry timer, run the onDisconnect operations, drop the listens.
    mutating func transportClosed() -> Bool {
        guard !isClosed else { return false }
        state = .closed
        return true
    }
}
