// TokenMinter -- signs HS256 tokens with the daemon's secret (`canopy token mint`).

import CanopyCore

/// Creates signed tokens.
public enum TokenMinter {
    /// Mints an HS256 token carrying `claims` plus `iat` and `exp`.
    ///
    /// The header is `{"alg":"HS256","typ":"JWT"}` plus `kid` when given. Any `iat` or `exp`
    /// in `claims` is replaced; every other claim is kept in order.
    /// - Parameters:
    ///   - claims: A JSON object (a programmer error otherwise).
    ///   - secret: The signing secret (not empty).
    ///   - issuedAt: `iat`, in seconds since the epoch.
    ///   - ttlSeconds: Lifetime; `exp` = `issuedAt + ttlSeconds`.
    ///   - kid: Optional key id for the header.
    /// - Returns: The compact token.
    public static func mintHS256(
        claims: JSONValue, secret: [UInt8], issuedAt: Int64, ttlSeconds: Int64, kid: String? = nil
    ) -> String {
        precondition(!secret.isEmpty, "an HS256 secret cannot be empty")
        return compact(header: header(.hs256, kid: kid), claims: stamped(claims, issuedAt, ttlSeconds)) {
            HMACSHA256.authenticate($0, key: secret)
        }
    }

    /// Mints an RS256 or ES256 token with a ``SigningKey`` (tests and tools acting as an identity provider).
    package static func mint(
        claims: JSONValue, key: SigningKey, issuedAt: Int64, ttlSeconds: Int64, kid: String? = nil
    ) -> String {
        compact(header: header(key.algorithm, kid: kid), claims: stamped(claims, issuedAt, ttlSeconds)) {
            key.sign($0)
        }
    }

    /// Assembles `base64url(header).base64url(claims).base64url(sign(signing input))` from raw values.
    ///
    /// No checks at all: tests use it to build hostile tokens.
    package static func compact(header: JSONValue, claims: JSONValue, sign: ([UInt8]) -> [UInt8]) -> String {
        let input =
            CompactJWS.encodeBase64URL(Array(header.serialized().utf8)) + "."
            + CompactJWS.encodeBase64URL(Array(claims.serialized().utf8))
        return input + "." + CompactJWS.encodeBase64URL(sign(Array(input.utf8)))
    }

    private static func header(_ algorithm: JWTAlgorithm, kid: String?) -> JSONValue {
        var members = [JSONMember("alg", .string(algorithm.rawValue)), JSONMember("typ", .string("JWT"))]
        if let kid { members.append(JSONMember("kid", .string(kid))) }
        return .object(members)
    }

    private static func stamped(_ claims: JSONValue, _ issuedAt: Int64, _ ttlSeconds: Int64) -> JSONValue {
        guard let given = claims.members else { preconditionFailure("claims must be a JSON object") }
        let (expiry, overflow) = issuedAt.addingReportingOverflow(ttlSeconds)
        precondition(!overflow, "token lifetime overflows")
        return .object(
            given.filter { $0.key != "iat" && $0.key != "exp" } + [
                JSONMember("iat", .int(issuedAt)), JSONMember("exp", .int(expiry)),
            ])
    }
}
