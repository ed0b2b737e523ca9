// RulesAndTokensTests -- the event ruleset's access matrix over real HTTP with real signed tokens.

import CanopyCore
import CanopyNet
import CanopyServer
import Foundation
import Testing

/// The package's `rules/` directory.
func rulesFile(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("rules/\(name)").path
}

@Suite struct RulesAndTokensTests {
    static let ns = "summit-2026"
    static let event = #"""
        {"public":{"admin":{"content":{"g":{"order":0,"title":"Welcome"}}}},
         "private":{"admin":{"pendingContent":{"x":{"order":1,"type":"text"}},"lastPublishedAt":5},
                    "adminable":{"users":{"901":{"content":{"u":{"order":2}}},"1027":{"content":{"v":{"order":3}}}},
                                 "tiers":{"55":{"content":{"t":{"order":4}}},"78":{"content":{"w":{"order":5}}}},
                                 "groups":{"42":{"content":{"h":{"order":6}}},"43":{"content":{"k":{"order":7}}}}}}}
        """#

    func withEvent(_ body: (InProcessServer, HTTPClient) throws -> Void) throws {
        try withServer(configure: { $0.rulesFile = rulesFile("personalized-content.rules.json") }) { server in
            let client = server.client()
            let r = try client.json("PUT", "/.json?ns=\(Self.ns)", Self.event, headers: [("Authorization", "Bearer \(server.admin)")])
            #expect(r.status == 200)
            try body(server, client)
        }
    }

    func token(_ server: InProcessServer, _ claims: JSONValue, ttl: Int64 = 3600) throws -> String {
        try server.daemon.credentials.mint(claims: claims, ttlSeconds: ttl, now: SystemClock().nowMilliseconds())
    }

    static let attendee901: JSONValue = [
        "uid": "901", "userId": "901", "tierId": "55", "groups": ["42": true], "ns": "summit-2026",
    ]

    @Test func attendeeReadsOwnTierGroupAndPublicOnly() throws {
        try withEvent { server, c in
            let t = try token(server, Self.attendee901)
            func status(_ path: String, auth: String? = nil) throws -> Int {
                try c.json("GET", "\(path).json?ns=\(Self.ns)&auth=\(auth ?? t)").status
            }
            #expect(try status("/private/adminable/users/901") == 200)
            #expect(try status("/private/adminable/users/901/content/u") == 200)
            #expect(try status("/private/adminable/tiers/55") == 200)
            #expect(try status("/private/adminable/groups/42") == 200)
            #expect(try status("/public/admin/content") == 200)
            #expect(try status("/private/adminable/users/1027") == 401)
            #expect(try status("/private/adminable/tiers/78") == 401)
            #expect(try status("/private/adminable/groups/43") == 401)
            #expect(try status("/private/adminable/users") == 401)
            #expect(try status("/private/admin/pendingContent") == 401)
            #expect(try status("/private/admin/lastPublishedAt") == 401)
            #expect(try status("/") == 401)
            // Attendees write nothing.
            let w = try c.json("PUT", "/private/adminable/users/901/content/u.json?ns=\(Self.ns)&auth=\(t)", "1")
            #expect(w.status == 401)
            let p = try c.json("PUT", "/public/admin/content/g.json?ns=\(Self.ns)&auth=\(t)", "1")
            #expect(p.status == 401)
            // Bearer works the same as ?auth=.
            let b = try c.json(
                "GET", "/private/adminable/users/901.json?ns=\(Self.ns)", headers: [("Authorization", "Bearer \(t)")])
            #expect(b.status == 200)
            #expect(b.json == ["content": ["u": ["order": 2]]])
        }
    }

    @Test func adminTokenReadsAndWritesEverything() throws {
        try withEvent { server, c in
            let t = try token(server, ["uid": "org-1", "admin": true, "ns": .string(Self.ns)])
            #expect(try c.json("GET", "/private/admin/pendingContent.json?ns=\(Self.ns)&auth=\(t)").status == 200)
            let w = try c.json("PUT", "/private/admin/pendingContent/y.json?ns=\(Self.ns)&auth=\(t)", #"{"order":9}"#)
            #expect(w.status == 200)
            // .validate: an item's order must be a number.
            let bad = try c.json(
                "PUT", "/private/admin/pendingContent/z.json?ns=\(Self.ns)&auth=\(t)", #"{"order":"soon"}"#)
            #expect(bad.status == 401)
        }
    }

    @Test func badTokensAreRefused() throws {
        try withEvent { server, c in
            let good = try token(server, Self.attendee901)
            let path = "/public/admin/content.json?ns=\(Self.ns)"
            // Expired.
            let expired = try server.daemon.credentials.mint(
                claims: Self.attendee901, ttlSeconds: 60, now: SystemClock().nowMilliseconds() - 3_600_000)
            #expect(try c.json("GET", path + "&auth=\(expired)").status == 401)
            // Tampered payload (signature no longer matches).
            var parts = good.split(separator: ".").map(String.init)
            let forged = Base64.encode(Array(#"{"userId":"1027","tierId":"78","ns":"summit-2026"}"#.utf8), url: true, padding: false)
            parts[1] = forged
            #expect(try c.json("GET", path + "&auth=\(parts.joined(separator: "."))").status == 401)
            // alg:none is refused outside emulator mode.
            let header = Base64.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8), url: true, padding: false)
            #expect(try c.json("GET", path + "&auth=\(header).\(forged).").status == 401)
            // Signed with another secret.
            let other = try withServer { other in try self.token(other, Self.attendee901) }
            #expect(try c.json("GET", path + "&auth=\(other)").status == 401)
            // Another event's token.
            let elsewhere = try token(server, ["userId": "901", "tierId": "55", "ns": "other-event"])
            let r = try c.json("GET", path + "&auth=\(elsewhere)")
            #expect(r.status == 401)
            #expect(r.json?["error"]?.stringValue?.contains("namespace") == true)
            // The good one works.
            #expect(try c.json("GET", path + "&auth=\(good)").status == 200)
        }
    }

    @Test func rulesCanBeReplacedAtRuntimeAndInvalidRulesAreRefused() throws {
        try withEvent { server, c in
            let admin = [("Authorization", "Bearer \(server.admin)")]
            var r = try c.json("GET", "/.settings/rules.json?ns=\(Self.ns)", headers: admin)
            #expect(r.status == 200)
            // The text as stored: the event rules carry comments, so it parses in the rules dialect only.
            #expect(try JSONValue.parse(r.response.body, options: .rules)["rules"] != nil)
            r = try c.json("PUT", "/.settings/rules.json?ns=\(Self.ns)", #"{"rules":{".read":"auth.uid ==="}}"#, headers: admin)
            #expect(r.status == 400)
            #expect(r.json?["error"]?.stringValue?.isEmpty == false)
            // The old rules are still in force.
            let t = try token(server, Self.attendee901)
            #expect(try c.json("GET", "/public/admin/content.json?ns=\(Self.ns)&auth=\(t)").status == 200)
            r = try c.json("PUT", "/.settings/rules.json?ns=\(Self.ns)", #"{"rules":{".read":false}}"#, headers: admin)
            #expect(r.status == 200)
            #expect(try c.json("GET", "/public/admin/content.json?ns=\(Self.ns)&auth=\(t)").status == 401)
            // Only the admin credential may touch rules.
            r = try c.json("GET", "/.settings/rules.json?ns=\(Self.ns)&auth=\(t)")
            #expect(r.status == 401)
        }
    }

    @Test func authVariableOverrideActsAsThatAuth() throws {
        try withEvent { server, c in
            let override = "%7B%22uid%22%3A%22901%22%2C%22token%22%3A%7B%22userId%22%3A%22901%22%7D%7D"
            let admin = [("Authorization", "Bearer \(server.admin)")]
            var r = try c.json(
                "GET", "/private/adminable/users/901.json?ns=\(Self.ns)&auth_variable_override=\(override)", headers: admin)
            #expect(r.status == 200)
            r = try c.json(
                "GET", "/private/adminable/users/1027.json?ns=\(Self.ns)&auth_variable_override=\(override)",
                headers: admin)
            #expect(r.status == 401)
            r = try c.json("GET", "/private/adminable/users/901.json?ns=\(Self.ns)&auth_variable_override=\(override)")
            #expect(r.status == 401)
        }
    }
}

/// SSE streams end with `auth_revoked` when the token expires, and `cancel` when new rules deny the read.
@Suite struct EventStreamRevocationTests {
    @Test func tokenExpiryAndRulesChangesEndStreams() throws {
        try withServer(configure: { $0.rulesFile = rulesFile("personalized-content.rules.json") }) { server in
            let ns = "sserevoke"
            let admin = [("Authorization", "Bearer \(server.admin)")]
            _ = try server.client().json("PUT", "/public/admin/content.json?ns=\(ns)", #"{"g":{"order":1}}"#, headers: admin)
            // exp 58 s ago: still honoured (60 s of skew), revoked 2 s from now.
            let short = try server.daemon.credentials.mint(
                claims: ["uid": "901", "userId": "901", "ns": .string(ns)], ttlSeconds: 1,
                now: SystemClock().nowMilliseconds() - 59_000)
            let s1 = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5)
            #expect(try s1.openStream("/public/admin/content.json?ns=\(ns)&auth=\(short)", headers: [("Accept", "text/event-stream")]).status == 200)
            let expired = readEvents(s1, until: "auth_revoked")
            #expect(expired.contains("event: put"))
            #expect(expired.contains("event: auth_revoked\ndata: credential is no longer valid\n\n"))
            let long = try server.daemon.credentials.mint(
                claims: ["uid": "901", "userId": "901", "ns": .string(ns)], ttlSeconds: 600, now: SystemClock().nowMilliseconds())
            let s2 = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5)
            #expect(try s2.openStream("/public/admin/content.json?ns=\(ns)&auth=\(long)", headers: [("Accept", "text/event-stream")]).status == 200)
            #expect(readEvents(s2, until: "event: put").contains("event: put"))
            _ = try server.client().json("PUT", "/.settings/rules.json?ns=\(ns)", #"{"rules":{".read":false}}"#, headers: admin)
            #expect(readEvents(s2, until: "cancel").contains("event: cancel\ndata: \"Permission denied\""))
        }
    }
}

/// Emulator mode follows the real Firebase emulator where it differs from our secure default.
@Suite struct EmulatorModeTests {
    @Test func emulatorNamespacesStartWithOpenRulesLikeFirebase() throws {
        try withServer(configure: { $0.emulator = true }) { server in
            let c = server.client()
            #expect(try c.json("PUT", "/a.json?ns=open", "1").status == 200)
            #expect(try c.json("GET", "/a.json?ns=open").json == 1)
            let rules = try c.json("GET", "/.settings/rules.json?ns=open", headers: [("Authorization", "Bearer owner")])
            #expect(rules.json == ["rules": [".read": true, ".write": true]])
        }
    }

    /// The JS SDK's `mockUserToken` is unsigned and dated from 0 (`iat: 0, exp: 3600`); the emulator accepts it.
    @Test func unsignedMockTokensWorkOnlyInEmulatorMode() throws {
        func b64(_ s: String) -> String { Base64.encode(Array(s.utf8), url: true, padding: false) }
        let mock = b64(#"{"alg":"none","type":"JWT"}"#) + "." + b64(#"{"iat":0,"exp":3600,"sub":"alice","user_id":"alice"}"#) + "."
        let rules = #"{"rules":{"users":{"$uid":{".read":"auth != null && auth.uid == $uid"}}}}"#
        for emulator in [true, false] {
            try withServer(configure: { $0.emulator = emulator }) { server in
                let c = server.client()
                let admin = [("Authorization", "Bearer \(server.admin)")]
                #expect(try c.json("PUT", "/.settings/rules.json?ns=m", rules, headers: admin).status == 200)
                #expect(try c.json("PUT", "/users/alice.json?ns=m", "1", headers: admin).status == 200)
                let r = try c.json("GET", "/users/alice.json?ns=m&auth=\(mock)")
                #expect(r.status == (emulator ? 200 : 401))
                #expect(try c.json("GET", "/users/bob.json?ns=m&auth=\(mock)").status == 401)
            }
        }
    }
}
