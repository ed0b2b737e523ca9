// TokenExpiryRuleTests -- one rule for an expired token on every transport: honoured until exp + 60 s of skew,
// refused after it, and a session or stream holding it is revoked at that moment, never at once.
//
// Before, `auth` accepted a token up to 60 s past `exp` and then revoked it immediately (`ac expired_token`), so
// an SDK holding a fixed token reconnected dozens of times a minute while data was still served to it.

import CanopyCore
import CanopyNet
import Foundation
import Testing

@Suite struct TokenExpiryRuleTests {
    private let wire = WireProtocolTests()
    private let rules = #"{"rules": {"users": {"$uid": {".read": "auth.uid == $uid", ".write": "auth.uid == $uid"}}}}"#

    /// A token for uid u1 whose `exp` was `ago` seconds ago.
    private func token(_ server: InProcessServer, expiredSecondsAgo ago: Int64) throws -> String {
        try server.daemon.credentials.mint(
            claims: ["uid": "u1"], ttlSeconds: 1, now: SystemClock().nowMilliseconds() - (ago + 1) * 1000)
    }

    private func prepare(_ server: InProcessServer) throws {
        let admin = [("Authorization", "Bearer \(server.admin)")]
        #expect(try server.client().json("PUT", "/.settings/rules.json?ns=exp", rules, headers: admin).status == 200)
        #expect(try server.client().json("PUT", "/users/u1.json?ns=exp", "1", headers: admin).status == 200)
    }

    @Test func withinTheSkewEveryTransportHonoursTheToken() throws {
        try withServer { (server: InProcessServer) throws in
            try prepare(server)
            let t = try token(server, expiredSecondsAgo: 30)
            #expect(try server.client().json("GET", "/users/u1.json?ns=exp&auth=\(t)").json == 1)
            let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 2)
            #expect(try stream.openStream("/users/u1.json?ns=exp&auth=\(t)", headers: [("Accept", "text/event-stream")]).status == 200)
            let first = readEvents(stream, until: "\n\n")
            #expect(first.hasPrefix("event: put"))
            let socket = try wire.connect(server, "exp")
            #expect(socket.reply(socket.request("auth", ["cred": .string(t)]))?["d"]?["b"]?["s"] == "ok")
            #expect(socket.reply(socket.request("q", ["p": "/users/u1", "h": ""]))?["d"]?["b"]?["s"] == "ok")
            // Not revoked at once: the token has 30 s left.
            #expect(socket.push("ac", timeout: 1) == nil)
            #expect(!readEvents(stream, until: "auth_revoked", timeout: 1).contains("auth_revoked"))
        }
    }

    @Test func pastTheSkewEveryTransportRefusesIt() throws {
        try withServer { (server: InProcessServer) throws in
            try prepare(server)
            let t = try token(server, expiredSecondsAgo: 61)
            let rest = try server.client().json("GET", "/users/u1.json?ns=exp&auth=\(t)")
            #expect(rest.status == 401)
            #expect(rest.json?["error"]?.stringValue?.contains("expired") == true)
            let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 2)
            #expect(try stream.openStream("/users/u1.json?ns=exp&auth=\(t)", headers: [("Accept", "text/event-stream")]).status == 401)
            let socket = try wire.connect(server, "exp")
            #expect(socket.reply(socket.request("auth", ["cred": .string(t)]))?["d"]?["b"]?["s"] == "expired_token")
            #expect(socket.reply(socket.request("q", ["p": "/users/u1", "h": ""]))?["d"]?["b"]?["s"] == "permission_denied")
        }
    }

    /// At exp + skew the session is told (`ac`), its listen is cancelled (`c`), and nothing more reaches it.
    @Test func atTheEndOfTheSkewTheSessionIsRevokedAndSeesNoMoreData() throws {
        try withServer { (server: InProcessServer) throws in
            try prepare(server)
            let t = try token(server, expiredSecondsAgo: 58)  // honoured for 2 more seconds
            let socket = try wire.connect(server, "exp")
            let auth = try #require(socket.reply(socket.request("auth", ["cred": .string(t)])))
            #expect(auth["d"]?["b"]?["s"] == "ok")
            // The reply reports the token's own exp, as Firebase does (clients refresh from it).
            let exp = try #require(auth["d"]?["b"]?["d"]?["expires"]?.int64Value)
            #expect(abs(exp - (SystemClock().nowMilliseconds() / 1000 - 58)) <= 2)
            #expect(socket.reply(socket.request("q", ["p": "/users/u1", "h": ""]))?["d"]?["b"]?["s"] == "ok")
            #expect(socket.push("d", path: "/users/u1") != nil)
            #expect(socket.push("ac", timeout: 0.5) == nil)
            let revoked = try #require(socket.push("ac", timeout: 10))
            #expect(revoked["d"]?["b"]?["s"] == "expired_token")
            #expect(socket.push("c", path: "/users/u1") != nil)
            let admin = [("Authorization", "Bearer \(server.admin)")]
            #expect(try server.client().json("PUT", "/users/u1.json?ns=exp", "2", headers: admin).status == 200)
            #expect(socket.push("d", path: "/users/u1", timeout: 0.5) == nil)
            #expect(socket.reply(socket.request("g", ["p": "/users/u1"]))?["d"]?["b"]?["s"] == "permission_denied")
        }
    }
}
