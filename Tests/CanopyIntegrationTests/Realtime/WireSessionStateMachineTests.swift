// WireSessionStateMachineTests -- a wire session's phases (connected, authenticated, closed) and its token expiry,
// as events and the actions they return (no loop, no sockets).

import CanopyCore
import Testing

@testable import CanopyServer

@Suite struct WireSessionStateMachineTests {
    typealias Machine = WireSessionStateMachine
    static let user = Identity.user(auth: ["uid": "901"], expiresAt: 60_000)

    @Test func aSessionStartsAnonymousAndAnExpiringCredentialArmsItsTimer() {
        var session = Machine()
        #expect(session.identity.isAdmin == false)
        #expect(session.identity.rulesAuth == Identity.anonymous.rulesAuth)
        let action = session.identityChanged(to: Self.user, revokedAt: 60_000)
        #expect(action == .arm(revokedAt: 60_000))
        #expect(session.identity.rulesAuth == Self.user.rulesAuth)
    }

    @Test func expiryReturnsTheSessionToAnonymousOnce() {
        var session = Machine()
        _ = session.identityChanged(to: Self.user, revokedAt: 60_000)
        let first = session.tokenExpired()
        #expect(first)
        #expect(session.identity.rulesAuth == Identity.anonymous.rulesAuth)
        let again = session.tokenExpired()
        #expect(!again)  // nothing left to expire: no second `ac`
    }

    @Test func aCredentialWithoutExpiryOrUnauthCancelsTheTimerAndCannotExpire() {
        var session = Machine()
        _ = session.identityChanged(to: Self.user, revokedAt: 60_000)
        let admin = session.identityChanged(to: .admin, revokedAt: nil)
        #expect(admin == .cancel)
        #expect(session.identity.isAdmin)
        let stale = session.tokenExpired()
        #expect(!stale)  // a timer left from the replaced credential does nothing
        let unauth = session.identityChanged(to: .anonymous, revokedAt: nil)
        #expect(unauth == .cancel)
        #expect(!session.identity.isAdmin)
    }

    @Test func closingHappensOnceAndFreezesTheSession() {
        var session = Machine()
        _ = session.identityChanged(to: Self.user, revokedAt: 60_000)
        let first = session.transportClosed()
        #expect(first)
        #expect(session.isClosed)
        let second = session.transportClosed()
        #expect(!second)  // onDisconnect operations run once
        let late = session.identityChanged(to: .admin, revokedAt: nil)
        #expect(late == nil)
        let expired = session.tokenExpired()
        #expect(!expired)  // no `ac` to a closed session
    }
}
