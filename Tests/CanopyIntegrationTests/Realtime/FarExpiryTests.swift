// FarExpiryTests -- a token whose `exp` is too far off to be a timer neither crashes the daemon nor ends what it
// authorizes: over SSE and wire `auth`, signed, and unsigned in emulator mode; the daemon keeps serving after.

import CanopyAuth
import CanopyCore
import CanopyNet
import CanopyServer
import Foundation
import Testing

@Suite(.timeLimit(.minutes(1))) struct FarExpiryTests {
    static let rules = #"{"rules":{".read":"auth != null",".write":"auth != null"}}"#

    /// `exp` values past what a millisecond timer can hold: `1e308` (a double: `exp × 1000` is infinite),
    /// 2^63/1000 + 1 (the first whole second whose milliseconds overflow Int64) and 600 years from now (fits
    /// Int64 milliseconds, overflows the loop's nanoseconds).
    static func farExpiries() -> [JSONValue] {
        let now = SystemClock().nowMilliseconds() / 1000
        return [.double(1e308), .int(Int64.max / 1000 + 1), .int(now + 600 * 31_556_952)]
    }

    /// A token for uid `u1` expiring at `exp`: HS256 with `secret`, or unsigned (`alg: none`) when it is nil.
    static func token(exp: JSONValue, secret: [UInt8]?) -> String {
        let claims: JSONValue = .object([
            JSONMember("uid", "u1"), JSONMember("iat", .int(SystemClock().nowMilliseconds() / 1000)),
            JSONMember("exp", exp),
        ])
        guard let secret else {
            return TokenMinter.compact(header: ["alg": "none", "typ": "JWT"], claims: claims) { _ in [] }
        }
        return TokenMinter.compact(header: ["alg": "HS256", "typ": "JWT"], claims: claims) {
            HMACSHA256.authenticate($0, key: secret)
        }
    }

    /// A daemon whose namespace `ns` only lets tokens read and write, with `/a` = 1; `emulator` selects the mode.
    func withFarExpiryServer(emulator: Bool, _ body: (InProcessServer, _ secret: [UInt8]?) throws -> Void) throws {
        try withServer(configure: { $0.emulator = emulator }) { server in
            let admin = [("Authorization", "Bearer \(server.admin)")]
            let c = server.client()
            #expect(try c.json("PUT", "/.settings/rules.json?ns=far", Self.rules, headers: admin).status == 200)
            #expect(try c.json("PUT", "/a.json?ns=far", "1", headers: admin).status == 200)
            let secret = emulator ? nil : try SecretFile.loadOrCreate(path: server.dataDirectory + "/signing.key")
            try body(server, secret)
        }
    }

    @Test(arguments: [false, true])
    func eventStreamWithAFarExpiryStaysOpen(emulator: Bool) throws {
        try withFarExpiryServer(emulator: emulator) { server, secret in
            let admin = [("Authorization", "Bearer \(server.admin)")]
            for (index, exp) in Self.farExpiries().enumerated() {
                let token = Self.token(exp: exp, secret: secret)
                let stream = HTTPClient(host: "127.0.0.1", port: server.port, timeoutSeconds: 5)
                let head = try stream.openStream(
                    "/a.json?ns=far&auth=\(token)", headers: [("Accept", "text/event-stream")])
                #expect(head.status == 200, "exp \(exp)")
                #expect(readEvents(stream, until: "\n\n").contains(#"data: {"path":"/","data":"#), "exp \(exp)")
                // The daemon is alive and the stream still authorized: a later write reaches it.
                let value = "\(100 + index)"
                #expect(try server.client().json("PUT", "/a.json?ns=far", value, headers: admin).status == 200)
                let events = readEvents(stream, until: "\n\n")
                #expect(events.contains(#"{"path":"/","data":\#(value)}"#), "exp \(exp)")
                #expect(!events.contains("auth_revoked"), "exp \(exp)")
                stream.close()
            }
            #expect(try server.client().json("GET", "/a.json?ns=far", headers: admin).json == 102)
        }
    }

    @Test(arguments: [false, true])
    func wireAuthWithAFarExpiryStaysAuthenticated(emulator: Bool) throws {
        try withFarExpiryServer(emulator: emulator) { server, secret in
            for (index, exp) in Self.farExpiries().enumerated() {
                let client = try WireTestClient(port: server.port, namespace: "far")
                #expect(client.waitFor { $0["t"] == "c" } != nil)
                let r = client.request("auth", ["cred": .string(Self.token(exp: exp, secret: secret))])
                let reply = try #require(client.reply(r), "exp \(exp)")
                #expect(reply["d"]?["b"]?["s"] == "ok", "exp \(exp)")
                #expect(reply["d"]?["b"]?["d"]?["auth"]?["uid"] == "u1", "exp \(exp)")
                // The session still serves the identity: a listen and a write, and no expiry push.
                let q = client.request("q", ["p": "/a", "h": ""])
                #expect(client.reply(q)?["d"]?["b"]?["s"] == "ok", "exp \(exp)")
                let p = client.request("p", ["p": "/a", "d": .int(Int64(200 + index))])
                #expect(client.reply(p)?["d"]?["b"]?["s"] == "ok", "exp \(exp)")
                #expect(client.push("ac", timeout: 0.2) == nil, "exp \(exp)")
                client.close()
            }
            let admin = [("Authorization", "Bearer \(server.admin)")]
            #expect(try server.client().json("GET", "/a.json?ns=far", headers: admin).json == 202)
        }
    }
}
