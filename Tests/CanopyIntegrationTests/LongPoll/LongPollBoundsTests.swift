// LongPollBoundsTests -- what anonymous long-poll clients can make the daemon hold: sessions per client address
// and in total, segments waiting to be reassembled, and sessions nobody uses (Architecture.md#Bounded-resources).
// Clients appear as different addresses by binding 127.0.0.2, 127.0.0.3, … (all loopback on Linux).

import CanopyCore
import CanopyNet
import CanopyServer
import Foundation
import Synchronization
import Testing

@testable import CanopyServer

@Suite struct LongPollBoundsTests {
    /// Sends a poll of `client`'s session carrying one segment of `characters` characters of a message of `total`
    /// segments (never completed, so it stays pending) and returns its status, or `Self.held` when the server
    /// holds the poll (it accepted the segment; the poll is answered when the next one arrives). A refusal is
    /// answered at once.
    func park(_ client: LongPollTestClient, segment: Int, characters: Int = 8192, total: Int = 1000)
        -> Int
    {
        park(client, segments: [segment], characters: characters, total: total)
    }

    /// `park` with several segments in one request.
    func park(_ client: LongPollTestClient, segments: [Int], characters: Int, total: Int = 1000)
        -> Int
    {
        let answer = Mutex<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        let data = String(repeating: "A", count: characters)
        Thread {
            let status = (try? client.sendSegments(segments.map { ($0, total, data) }))
            answer.withLock { $0 = status ?? -1 }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + 0.5) == .success else { return Self.held }
        return answer.withLock { $0 } ?? -1
    }

    /// `park`'s answer for a poll the server holds.
    static let held = 0

    /// Whether `park` saw the segment accepted: held, or answered 200 (released by a later poll meanwhile).
    func accepted(_ status: Int) -> Bool { status == Self.held || status == 200 }

    @Test func oneAddressCannotTakeEverySession() throws {
        try withServer(configure: {
            $0.maxLongPollSessionsPerAddress = 3
            $0.maxLongPollSessions = 5
        }) { server in
            for _ in 0..<3 {
                #expect(
                    try LongPollTestClient.start(
                        port: server.port, namespace: "b1", sourceAddress: "127.0.0.2"
                    ).status == 200)
            }
            let refused = try LongPollTestClient.start(
                port: server.port, namespace: "b1", sourceAddress: "127.0.0.2")
            #expect(refused.status == 429)
            #expect(refused.text.contains("Too many long-poll sessions from this address"))
            // Another address is served while the first one is at its limit, up to the server's own limit.
            let other = try LongPollTestClient(
                port: server.port, namespace: "b1", sourceAddress: "127.0.0.3")
            #expect(try other.disconnect() == 200)  // a live session
            #expect(
                try LongPollTestClient.start(port: server.port, namespace: "b1", sourceAddress: "127.0.0.3")
                    .status == 200)
            #expect(
                try LongPollTestClient.start(port: server.port, namespace: "b1", sourceAddress: "127.0.0.4")
                    .status == 200)
            #expect(
                try LongPollTestClient.start(port: server.port, namespace: "b1", sourceAddress: "127.0.0.5")
                    .status == 503)
        }
    }

    @Test func sessionsNobodyPollsEndWithinSeconds() throws {
        let clock = ManualClock()
        try withServer(configure: { $0.loopClock = clock }) { server in
            let abandoned = try LongPollTestClient(
                port: server.port, namespace: "b2", sourceAddress: "127.0.0.2")
            let polling = try LongPollTestClient(
                port: server.port, namespace: "b2", sourceAddress: "127.0.0.3")
            polling.startPolling()
            let r = try polling.request("gauth", ["cred": .string(server.admin)], segmentSize: 24)
            #expect(polling.reply(r)?["d"]?["b"]?["s"] == "ok")
            clock.advance(byMilliseconds: 16_000)
            // Two round trips through the loop: the pass that ran the first also fired the timers now due (the
            // idle sweep), and the second starts after it.
            _ = server.daemon.openNamespaceNames()
            _ = server.daemon.openNamespaceNames()
            #expect(try abandoned.disconnect() == 404)  // gone after 16 s (was: 60 s)
            // An authenticated session that polls stays (the unauthenticated one that holds a poll too: see
            // LongPollSessionStateMachineTests; here the poller may be between two polls when the clock jumps).
            let again = try polling.request("s", ["c": [:]])
            #expect(polling.reply(again)?["d"]?["b"]?["s"] == "ok")
            #expect(try polling.disconnect() == 200)
        }
    }

    @Test func segmentsAheadOfAGapAreBoundedPerSession() throws {
        try withServer { server in
            let a = try LongPollTestClient(port: server.port, namespace: "b3")
            // Segment 0 never comes; what waits behind the gap may not grow to the message limit (24 MiB).
            var statuses: [Int] = []
            for request in 0..<40 where statuses.last != 413 {
                statuses.append(park(a, segments: [2 * request + 1, 2 * request + 2], characters: 8000))
            }
            #expect(statuses.last == 413)
            #expect(statuses.dropLast().allSatisfy(accepted))
            #expect(statuses.count == 17)  // 32 segments of 8,000 characters waited: the 33rd would pass 256 KiB
            #expect(try a.disconnect() == 404)  // the session was ended
        }
    }

    @Test func pendingSegmentsAreBoundedPerAddress() throws {
        try withServer(configure: { $0.maxLongPollPendingCharactersPerAddress = 40_000 }) { server in
            let first = try LongPollTestClient(
                port: server.port, namespace: "b4", sourceAddress: "127.0.0.2")
            for segment in 0..<4 { #expect(accepted(park(first, segment: segment))) }  // 32 KiB in order
            // A second session of the same address would take the address past its budget: refused, ended.
            let second = try LongPollTestClient(
                port: server.port, namespace: "b4", sourceAddress: "127.0.0.2")
            #expect(park(second, segment: 0) == 503)
            #expect(try second.disconnect() == 404)
            // Other addresses are not affected, and the first session lives on.
            let other = try LongPollTestClient(
                port: server.port, namespace: "b4", sourceAddress: "127.0.0.3")
            #expect(accepted(park(other, segment: 0)))
            #expect(try first.disconnect() == 200)
        }
    }

    @Test func pendingSegmentsAreBoundedInTotal() throws {
        try withServer(configure: { $0.maxLongPollPendingCharacters = 40_000 }) { server in
            let a = try LongPollTestClient(port: server.port, namespace: "b5", sourceAddress: "127.0.0.2")
            for segment in 0..<4 { #expect(accepted(park(a, segment: segment))) }
            let b = try LongPollTestClient(port: server.port, namespace: "b5", sourceAddress: "127.0.0.3")
            #expect(park(b, segment: 0) == 503)
            #expect(try b.disconnect() == 404)
            // When the first session ends, its pending segments no longer count.
            #expect(try a.disconnect() == 200)
            let c = try LongPollTestClient(port: server.port, namespace: "b5", sourceAddress: "127.0.0.4")
            for segment in 0..<4 { #expect(accepted(park(c, segment: segment))) }
        }
    }

    @Test(arguments: [
        ("127.0.0.1:5000", "127.0.0.1"), ("[::1]:80", "0000:0000:0000:0000::/64"),
        ("[2001:db8:1:2:aaaa::1]:443", "2001:0db8:0001:0002::/64"),
        ("[2001:db8:1:2:bbbb::7]:443", "2001:0db8:0001:0002::/64"), ("[::ffff:10.0.0.7]:9", "10.0.0.7"),
        ("", ""),
    ])
    func clientAddressesAreCountedWithoutPortAndIPv6ByTheirSlash64(remote: String, key: String) {
        #expect(LongPollEndpoint.addressKey(remote) == key)
    }
}
