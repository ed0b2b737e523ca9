// TestFixtures -- shared keys (generated at test time), an injectable clock and token builders.

import CanopyCore
import Testing

@testable import CanopyAuth

/// A clock stuck at one instant.
struct FixedClock: WallClock {
    let seconds: Int64
    func nowMilliseconds() -> Int64 { seconds * 1000 }
}

enum Fixtures {
    /// 2026-11-30T12:00:00Z, the instant every test runs at.
    static let now: Int64 = 1_796_040_000
    static let clock = FixedClock(seconds: now)
    static let secret = Array("0123456789abcdef0123456789abcdef".utf8)
    static let rsa = SigningKey.generate(for: .rs256)
    static let ec = SigningKey.generate(for: .es256)
    static let otherRSA = SigningKey.generate(for: .rs256)

    static let claims: JSONValue = .object([
        JSONMember("userId", .string("901")), JSONMember("tierId", .string("55")),
        JSONMember("ns", .string("summit-2026")),
    ])

    static func header(_ alg: String, kid: String? = nil) -> JSONValue {
        var members = [JSONMember("alg", .string(alg)), JSONMember("typ", .string("JWT"))]
        if let kid { members.append(JSONMember("kid", .string(kid))) }
        return .object(members)
    }

    /// `claims` plus the given time claims (seconds), for hand-built tokens.
    static func claims(_ extra: [String: Int64], base: JSONValue = claims) -> JSONValue {
        .object(base.members! + extra.sorted { $0.key < $1.key }.map { JSONMember($0.key, .int($0.value)) })
    }

    static func jwk(_ key: SigningKey, kid: String?, alg: Bool = true) -> JSONValue {
        var members: [JSONMember] = [JSONMember("kty", .string(key.algorithm == .rs256 ? "RSA" : "EC"))]
        if key.algorithm == .es256 { members.append(JSONMember("crv", .string("P-256"))) }
        for part in key.publicComponents {
            members.append(JSONMember(part.name, .string(Base64.encode(part.bytes, url: true, padding: false))))
        }
        if let kid { members.append(JSONMember("kid", .string(kid))) }
        if alg { members.append(JSONMember("alg", .string(key.algorithm.rawValue))) }
        members.append(JSONMember("use", .string("sig")))
        return .object(members)
    }

    static func verifier(
        _ keys: [VerificationKey], allowUnsigned: Bool = false, audience: String? = nil, issuer: String? = nil
    ) -> TokenVerifier {
        TokenVerifier(keys: keys, clock: clock, allowUnsigned: allowUnsigned, audience: audience, issuer: issuer)
    }

    static func base64url(_ text: String) -> String { Base64.encode(Array(text.utf8), url: true, padding: false) }
}

/// Runs `body` and returns the kind of `JWTError` it threw, or nil if it returned.
/// Any other error is recorded as a test issue.
func jwtErrorKind<T>(_ body: () throws -> T, sourceLocation: SourceLocation = #_sourceLocation) -> JWTError.Kind? {
    do {
        _ = try body()
        return nil
    } catch let error as JWTError {
        return error.kind
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
