// LegacyTokenTests -- Firebase's legacy tokens (v, iat, d, admin, debug, exp), signed with the database secret.

import CanopyAuth
import CanopyCore
import CanopyNet
import Foundation
import Testing

@testable import CanopyServer

/// A legacy token as the old generators make it: HS256 over the claims, keyed by the secret's text.
func legacyToken(_ claims: JSONValue, secret: String) -> String {
    let header = Base64.encode(Array(#"{"typ":"JWT","alg":"HS256"}"#.utf8), url: true, padding: false)
    let body = Base64.encode(Array(claims.serialized().utf8), url: true, padding: false)
    let input = header + "." + body
    let signature = HMACSHA256.authenticate(Array(input.utf8), key: Array(secret.utf8))
    return input + "." + Base64.encode(signature, url: true, padding: false)
}

@Suite struct LegacyTokenTests {
    @Test func theDatabaseSecretSignsLegacyTokensThatRulesSeeAsTheirPayload() throws {
        try withServer { (server: InProcessServer) throws in
            let c = server.client()
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let rules = #"{"rules": {"users": {"$uid": {".read": "auth.uid == $uid", ".write": "auth.uid == $uid"}}}}"#
            #expect(try c.json("PUT", "/.settings/rules.json?ns=legacy", rules, headers: admin).status == 200)
            let secret = server.daemon.credentials.databaseSecret
            let now = Int64(Date().timeIntervalSince1970)
            let user = legacyToken(
                ["v": 0, "iat": .int(now), "d": ["uid": "ada", "email": "a@b.c"], "admin": false, "debug": false],
                secret: secret)
            #expect(try c.json("PUT", "/users/ada.json?ns=legacy&auth=\(user)", "1").status == 200)
            #expect(try c.json("GET", "/users/ada.json?ns=legacy&auth=\(user)").json == 1)
            #expect(try c.json("GET", "/users/bob.json?ns=legacy&auth=\(user)").status == 401)
            // admin: true bypasses the rules.
            let owner = legacyToken(["v": 0, "iat": .int(now), "d": .null, "admin": true], secret: secret)
            #expect(try c.json("GET", "/users.json?ns=legacy&auth=\(owner)").json == ["ada": 1])
            // Without exp a legacy token lasts 24 hours from iat; with exp, until exp.
            let old = legacyToken(["v": 0, "iat": .int(now - 90_000), "d": ["uid": "ada"]], secret: secret)
            #expect(try c.json("GET", "/users/ada.json?ns=legacy&auth=\(old)").status == 401)
            let renewed = legacyToken(
                ["v": 0, "iat": .int(now - 90_000), "exp": .int(now + 600), "d": ["uid": "ada"]], secret: secret)
            #expect(try c.json("GET", "/users/ada.json?ns=legacy&auth=\(renewed)").json == 1)
            let expired = legacyToken(["v": 0, "iat": .int(now - 900), "exp": .int(now - 600), "d": [:]], secret: secret)
            #expect(try c.json("GET", "/users/ada.json?ns=legacy&auth=\(expired)").status == 401)
            // Another secret, or no time at all, is refused.
            let forged = legacyToken(["v": 0, "iat": .int(now), "admin": true, "d": .null], secret: "guess")
            #expect(try c.json("GET", "/users.json?ns=legacy&auth=\(forged)").status == 401)
            let timeless = legacyToken(["v": 0, "admin": true, "d": .null], secret: secret)
            #expect(try c.json("GET", "/users.json?ns=legacy&auth=\(timeless)").status == 401)
        }
    }
}

/// A signed token without `exp` would never expire: refused unless `--allow-tokens-without-exp`.
@Suite struct TokenWithoutExpiryTests {
    @Test func aSignedTokenWithoutExpIsRefusedUnlessAllowed() throws {
        for allowed in [false, true] {
            try withServer(configure: { $0.allowTokensWithoutExpiry = allowed }) { (server: InProcessServer) throws in
                let c = server.client()
                let admin = [("Authorization", "Bearer \(server.admin)")]
                #expect(try c.json("PUT", "/.settings/rules.json?ns=noexp", #"{"rules":{".read":"auth != null"}}"#, headers: admin).status == 200)
                let now = Int64(Date().timeIntervalSince1970)
                let forever = legacyToken(["uid": "u1", "iat": .int(now)], secret: server.daemon.credentials.databaseSecret)
                let rest = try c.json("GET", "/.json?ns=noexp&auth=\(forever)")
                #expect(rest.status == (allowed ? 200 : 401), "allowed: \(allowed)")
                let wire = WireProtocolTests()
                let socket = try wire.connect(server, "noexp")
                let status = socket.reply(socket.request("auth", ["cred": .string(forever)]))?["d"]?["b"]?["s"]
                #expect(status == (allowed ? "ok" : "invalid_token"))
                // With an exp, always accepted.
                let bounded = legacyToken(["uid": "u1", "iat": .int(now), "exp": .int(now + 600)], secret: server.daemon.credentials.databaseSecret)
                #expect(try c.json("GET", "/.json?ns=noexp&auth=\(bounded)").status == 200)
            }
        }
    }

    @Test func anAdminTokenNamesItsEventOrSaysAllEvents() throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bare = try runCanopy(["token", "mint", "--admin", "--data", dir])
        #expect(bare.status == 64)
        #expect(bare.stderr.contains("--all-events"))
        let claimed = try runCanopy(["token", "mint", "--claims", #"{"admin":true}"#, "--data", dir])
        #expect(claimed.status == 64)
        let scoped = try runCanopy(["token", "mint", "--admin", "--ns", "e1", "--data", dir])
        #expect(scoped.status == 0)
        #expect(try UnverifiedClaims.of(scoped.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["ns"] == "e1")
        let every = try runCanopy(["token", "mint", "--admin", "--all-events", "--data", dir])
        #expect(every.status == 0)
        #expect(try UnverifiedClaims.of(every.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["ns"] == nil)
        #expect(try runCanopy(["token", "mint", "--admin", "--all-events", "--ns", "e1", "--data", dir]).status == 64)
    }
}
