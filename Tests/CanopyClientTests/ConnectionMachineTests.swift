// ConnectionMachineTests -- the client's connection lifecycle: events in, actions out, time advanced by hand.

import Testing

@testable import CanopyClient

/// A machine with round numbers: 1 s first retry (×2, capped at 8 s, stable after 10 s), 45 s keep-alive,
/// 30 s connect timeout, and no jitter (the random source returns 1, the full delay).
private func machine() -> ConnectionMachine {
    ConnectionMachine(
        configuration: .init(
            reconnect: ReconnectPolicy(initialDelay: 1, maxDelay: 8, multiplier: 2, stableAfter: 10),
            keepAliveInterval: 45, connectTimeout: 30),
        random: { 0.999_999_999 })
}

/// Seconds since an arbitrary origin, as a monotonic instant.
private func at(_ seconds: Double) -> MonotonicInstant {
    MonotonicInstant(nanoseconds: 1_000_000_000_000).advanced(bySeconds: seconds)
}

/// What a lost connection that will be retried returns.
private func dropped(wasConnected: Bool, _ reason: ConnectionMachine.LossReason) -> [ConnectionMachine.Action] {
    [.closeTransport, .connectionLost(wasConnected: wasConnected, reason: reason), .publish(.disconnected)]
}

/// A machine connected on attempt 1 at time 0.
private func connected() -> ConnectionMachine {
    var m = machine()
    _ = m.start(now: at(0))
    _ = m.handshake(attempt: 1, now: at(0))
    return m
}

/// The reconnect delay the machine scheduled (its deadline minus `now`).
private func retryDelay(_ machine: ConnectionMachine, from now: MonotonicInstant) -> Double? {
    guard case .waiting(let retryAt) = machine.state else { return nil }
    return (retryAt.seconds(since: now) * 1000).rounded() / 1000
}

@Suite struct ConnectionMachineTests {
    @Test func startOpensTheFirstTransportAndTheHandshakeRestores() {
        var m = machine()
        #expect(m.start(now: at(0)) == [.publish(.connecting), .openTransport(attempt: 1)])
        #expect(m.nextDeadline == at(30))  // the handshake timeout
        #expect(m.received(attempt: 1, now: at(0.1)) == true)
        #expect(m.handshake(attempt: 1, now: at(0.2)) == [.restore, .publish(.connected)])
        #expect(m.isConnected)
        #expect(m.start(now: at(1)) == [])  // once only
    }

    @Test func eventsOfAnOlderAttemptAreIgnored() {
        var m = machine()
        _ = m.start(now: at(0))
        _ = m.transportClosed(attempt: 1, now: at(1))
        _ = m.tick(now: at(2))  // attempt 2 starts
        #expect(m.received(attempt: 1, now: at(2.1)) == false)
        #expect(m.handshake(attempt: 1, now: at(2.2)) == [])
        #expect(m.transportClosed(attempt: 1, now: at(2.3)) == [])
        #expect(m.handshake(attempt: 2, now: at(2.4)) == [.restore, .publish(.connected)])
    }

    @Test func aMissingHandshakeTimesOutThenRetriesWithBackoff() {
        var m = machine()
        _ = m.start(now: at(0))
        #expect(m.tick(now: at(29.9)) == [])
        #expect(
            m.tick(now: at(30))
                == dropped(wasConnected: false, .connectTimeout))
        #expect(retryDelay(m, from: at(30)) == 1)
        #expect(m.tick(now: at(30.5)) == [])
        #expect(m.tick(now: at(31)) == [.publish(.connecting), .openTransport(attempt: 2)])
    }

    @Test(arguments: [(failures: 1, delay: 1.0), (2, 2), (3, 4), (4, 8), (5, 8), (6, 8)])
    func failedAttemptsBackOffExponentiallyUpToTheCap(failures: Int, delay: Double) {
        var m = machine()
        var now = 0.0
        _ = m.start(now: at(now))
        for failure in 1...failures {
            _ = m.transportClosed(attempt: failure, now: at(now))
            if failure == failures { break }
            now += retryDelay(m, from: at(now)) ?? 0
            _ = m.tick(now: at(now))
        }
        #expect(retryDelay(m, from: at(now)) == delay)
    }

    @Test func jitterScalesTheDelayBetweenHalfAndAll() {
        var m = ConnectionMachine(configuration: machine().configuration, random: { 0 })
        _ = m.start(now: at(0))
        _ = m.transportClosed(attempt: 1, now: at(0))
        #expect(retryDelay(m, from: at(0)) == 0.5)
    }

    @Test func aStableConnectionStartsTheScheduleOver() {
        var m = machine()
        _ = m.start(now: at(0))
        _ = m.transportClosed(attempt: 1, now: at(0))  // next delays 1, 2, 4 …
        _ = m.tick(now: at(1))
        _ = m.transportClosed(attempt: 2, now: at(1))
        _ = m.tick(now: at(3))
        _ = m.handshake(attempt: 3, now: at(3))
        // Up for 5 s: not stable, the schedule continues.
        _ = m.transportClosed(attempt: 3, now: at(8))
        #expect(retryDelay(m, from: at(8)) == 4)
        _ = m.tick(now: at(12))
        _ = m.handshake(attempt: 4, now: at(12))
        // Up for 10 s: stable, back to the first delay.
        #expect(
            m.transportClosed(attempt: 4, now: at(22))
                == dropped(wasConnected: true, .transportClosed))
        #expect(retryDelay(m, from: at(22)) == 1)
    }

    @Test func aQuietLinkIsPingedAndASilentOneReplacedAtOnce() {
        var m = connected()
        m.sent(now: at(10))
        #expect(m.nextDeadline == at(55))  // 45 s after the last traffic
        #expect(m.tick(now: at(54)) == [])
        #expect(m.tick(now: at(55)) == [.ping])
        #expect(m.nextDeadline == at(90))  // the silence limit (2 × 45 s after the last frame received) comes first
        #expect(m.tick(now: at(89)) == [])
        #expect(
            m.tick(now: at(90))
                == dropped(wasConnected: true, .silent))
        #expect(retryDelay(m, from: at(90)) == 0)
    }

    @Test func receivedTrafficKeepsTheLinkAlive() {
        var m = connected()
        for second in stride(from: 40.0, through: 400, by: 40) {
            #expect(m.received(attempt: 1, now: at(second)) == true)
            #expect(m.tick(now: at(second + 1)) == [])
        }
        #expect(m.isConnected)
    }

    @Test func serverResetReconnectsAtOnce() {
        var m = connected()
        #expect(
            m.serverRequestedReconnect(now: at(5))
                == dropped(wasConnected: true, .serverReset))
        #expect(m.tick(now: at(5)) == [.publish(.connecting), .openTransport(attempt: 2)])
    }

    @Test func offlineStopsRetryingAndOnlineConnectsWithAFreshSchedule() {
        var m = machine()
        _ = m.start(now: at(0))
        _ = m.transportClosed(attempt: 1, now: at(0))
        _ = m.tick(now: at(1))
        _ = m.transportClosed(attempt: 2, now: at(1))  // next delay would be 2
        #expect(m.goOffline(now: at(2)) == [.publish(.offline)])
        #expect(m.nextDeadline == nil)
        #expect(m.tick(now: at(1000)) == [])
        #expect(m.goOffline(now: at(1000)) == [])
        #expect(m.goOnline(now: at(1000)) == [.publish(.connecting), .openTransport(attempt: 3)])
        #expect(m.goOnline(now: at(1000)) == [])
        _ = m.transportClosed(attempt: 3, now: at(1000))
        #expect(retryDelay(m, from: at(1000)) == 1)
    }

    @Test func goingOfflineWhileConnectedDropsTheLink() {
        var m = connected()
        #expect(
            m.goOffline(now: at(1))
                == [
                    .closeTransport, .connectionLost(wasConnected: true, reason: .offline),
                    .publish(.offline),
                ])
        #expect(m.received(attempt: 1, now: at(2)) == false)
    }

    @Test func closeIsFinal() {
        var m = machine()
        _ = m.start(now: at(0))
        #expect(m.close() == [.closeTransport, .publish(.closed)])
        #expect(m.isClosed && m.nextDeadline == nil)
        #expect(m.close() == [])
        #expect(m.goOnline(now: at(1)) == [] && m.goOffline(now: at(1)) == [])
        #expect(m.tick(now: at(100)) == [])
    }

    @Test func anAcceptedTokenIsRefreshedBeforeItExpires() {
        var m = connected()
        // An hour left: refresh a minute early.
        m.authAccepted(expiresIn: 3600, refreshable: true, now: at(0))
        #expect(m.refreshAt == at(3540))
        // A long quiet link pings along the way; the refresh comes once, at its time.
        var now = 0.0
        var refreshes: [Double] = []
        while now < 4000 {
            now += 5
            _ = m.received(attempt: 1, now: at(now))
            if m.tick(now: at(now)).contains(.refreshToken) { refreshes.append(now) }
        }
        #expect(refreshes == [3540])
        // Two minutes left: refresh at half the remaining life.
        m.authAccepted(expiresIn: 120, refreshable: true, now: at(now))
        #expect(m.refreshAt == at(now + 60))
    }

    @Test func noRefresherNoExpiryOrANewTokenMeansNoRefresh() {
        var m = machine()
        m.authAccepted(expiresIn: 3600, refreshable: false, now: at(0))
        #expect(m.refreshAt == nil)
        m.authAccepted(expiresIn: nil, refreshable: true, now: at(0))
        #expect(m.refreshAt == nil)
        m.authAccepted(expiresIn: 3600, refreshable: true, now: at(0))
        m.tokenReplaced()
        #expect(m.refreshAt == nil && m.tick(now: at(4000)) == [])
    }

    @Test func aRefreshDeadlineOutlivesAReconnect() {
        var m = connected()
        m.authAccepted(expiresIn: 100, refreshable: true, now: at(0))  // refresh at 50
        _ = m.transportClosed(attempt: 1, now: at(10))
        _ = m.goOffline(now: at(11))
        #expect(m.nextDeadline == at(50))
        #expect(m.tick(now: at(50)) == [.refreshToken])
    }

    @Test func refusalsAskForARefreshAtMostThreeTimesInARow() {
        var m = connected()
        #expect(
            (1...5).map { _ in m.authRefused() } == [
                [.refreshToken], [.refreshToken], [.refreshToken], [], [],
            ])
        m.authAccepted(expiresIn: nil, refreshable: true, now: at(1))
        #expect(m.authRefused() == [.refreshToken])
        // A new connection starts the count over as well.
        _ = m.authRefused()
        _ = m.authRefused()
        _ = m.serverRequestedReconnect(now: at(2))
        _ = m.tick(now: at(2))
        _ = m.handshake(attempt: 2, now: at(2))
        #expect(m.authRefused() == [.refreshToken])
        #expect(m.authRevoked() == [.refreshToken])
    }
}
