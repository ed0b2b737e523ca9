// VerifiedTokenTests -- uid, expiry, admin, namespace restriction and the rules `auth` object.

import CanopyCore
import Testing

@testable import CanopyAuth

@Suite struct VerifiedTokenTests {
    private func token(_ claims: JSONValue) -> VerifiedToken { VerifiedToken(claims: claims, algorithm: .hs256) }

    @Test(
        arguments: [
            (["uid": "a", "sub": "b", "user_id": "c"], "a"), (["sub": "b", "user_id": "c"], "b"),
            (["user_id": "c"], "c"),
            (["uid": "", "sub": "b"], "b"), (["uid": 5, "sub": "b"], "b"), ([:], nil),
        ] as [(JSONValue, String?)])
    func uidComesFromUidThenSub(claims: JSONValue, uid: String?) {
        #expect(token(claims).uid == uid)
    }

    @Test func expiresAtIsInMilliseconds() {
        #expect(token(["exp": 1_700_000_000]).expiresAt == 1_700_000_000_000)
        #expect(token(["exp": 1_700_000_000.5]).expiresAt == 1_700_000_000_500)
        #expect(token(["sub": "x"]).expiresAt == nil)
    }

    /// An `exp` whose milliseconds do not fit Int64 saturates to the bound (a moment never reached, or long past).
    @Test func farExpiriesSaturate() {
        #expect(token(["exp": 1e308]).expiresAt == .max)
        #expect(token(["exp": .int(Int64.max / 1000 + 1)]).expiresAt == .max)
        #expect(token(["exp": .int(Int64.max)]).expiresAt == .max)
        #expect(token(["exp": -1e308]).expiresAt == .min)
        #expect(token(["exp": .int(Int64.max / 1000)]).expiresAt == Int64.max / 1000 * 1000)
    }

    @Test func adminIsTheBooleanClaim() {
        #expect(token(["admin": true]).isAdmin)
        #expect(!token(["admin": "true"]).isAdmin)
        #expect(!token([:]).isAdmin)
    }

    @Test(
        arguments: [
            (nil, "summit-2026", true),
            ("summit-2026", "summit-2026", true), ("summit-2026", "expo-2027", false),
            (["summit-2026", "expo-2027"], "expo-2027", true), (["summit-2026"], "expo-2027", false),
            ([], "summit-2026", false), (["summit-2026", 7], "summit-2026", false),
            (7, "summit-2026", false), (["summit-2026": true], "summit-2026", false), ("", "", true),
            ("caf\u{E9}", "cafe\u{301}", false),  // canonically equivalent, but different bytes
        ] as [(JSONValue?, String, Bool)])
    func namespaceClaim(ns: JSONValue?, namespace: String, allowed: Bool) {
        var members = [JSONMember("sub", .string("u"))]
        if let ns { members.append(JSONMember("ns", ns)) }
        #expect(token(.object(members)).allows(namespace: namespace) == allowed)
    }

    @Test func rulesAuthKeepsClaimsUnderToken() {
        let claims: JSONValue = ["userId": "901", "groups": ["42": true], "sub": "u901"]
        let auth = token(claims).rulesAuth
        #expect(auth["uid"] == "u901")
        #expect(auth["provider"] == "custom")
        #expect(auth["token"] == claims)
        #expect(auth["userId"] == nil)
        #expect(auth["token"]?["groups"]?["42"] == true)
    }

    @Test func rulesAuthProviderAndMissingUid() {
        let auth = token(["firebase": ["sign_in_provider": "password"]]).rulesAuth
        #expect(auth["provider"] == "password")
        #expect(auth["uid"] == .null)
    }
}
