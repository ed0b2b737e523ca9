// TokenMinter -- signs HS256 tokens with the daemon's secret (`canopy token mint`).

import CanopyCore

/// Creates signed tokens.
public enum TokenMinter {
    /// The latest `exp` a minted token may carry: 9999-12-31T23:59:59Z, in seconds since the epoch.
    ///
    /// Far enough for any real lifetime, near enough that `exp × 1000` (the milliseconds every consumer works
    /// in) fits any 64-bit arithmetic and that the date prints as an ordinary four-digit year.
    public static let latestExpiry: Int64 = 253_402_300_799

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
    /// - Throws: ``TokenMintError`` when `exp` would be before the epoch or after ``latestExpiry``, or when the
    ///   token would be refused by ``TokenVerifier`` as malformed (claims nested deeper than 32, over 16 KiB).
    public static func mintHS256(
        claims: JSONValue, secret: [UInt8], issuedAt: Int64, ttlSeconds: Int64, kid: String? = nil
    ) throws(TokenMintError) -> String {
        precondition(!secret.isEmpty, "an HS256 secret cannot be empty")
        let token = compact(header: header(.hs256, kid: kid), claims: try stamped(claims, issuedAt, ttlSeconds)) {
            HMACSHA256.authenticate($0, key: secret)
        }
        return try verifiable(token, issuedAt, ttlSeconds)
    }

    /// Mints an RS256 or ES256 token with a ``SigningKey`` (tests and tools acting as an identity provider).
    /// - Throws: ``TokenMintError`` as ``mintHS256(claims:secret:issuedAt:ttlSeconds:kid:)`` does.
    package static func mint(
        claims: JSONValue, key: SigningKey, issuedAt: Int64, ttlSeconds: Int64, kid: String? = nil
    ) throws(TokenMintError) -> String {
        let token = compact(header: header(key.algorithm, kid: kid), claims: try stamped(claims, issuedAt, ttlSeconds)) {
            key.sign($0)
        }
        return try verifiable(token, issuedAt, ttlSeconds)
    }

    /// `token`, once it passes the structure and claims checks `TokenVerifier` makes (size, nesting, an `nbf`
    /// that is a number), so a minted token is never one that every server refuses as malformed.
    private static func verifiable(_ token: String, _ issuedAt: Int64, _ ttlSeconds: Int64) throws(TokenMintError)
        -> String
    {
        do {
            let claims = try CompactJWS(token).claims()
            _ = try TokenVerifier.numericDate(claims, "nbf")
        } catch {
            throw TokenMintError(claimsProblem: error.reason, issuedAt: issuedAt, ttlSeconds: ttlSeconds)
        }
        return token
    }

    /// The `exp` of a token issued at `issuedAt` (seconds since the epoch) living `ttlSeconds`.
    ///
    /// Callers with side effects (the CLI creating a data directory) check the lifetime with it first.
    /// - Throws: ``TokenMintError`` when the sum overflows or lies outside `0...latestExpiry`.
    public static func expiry(issuedAt: Int64, ttlSeconds: Int64) throws(TokenMintError) -> Int64 {
        let (expiry, overflow) = issuedAt.addingReportingOverflow(ttlSeconds)
        guard !overflow, (0...latestExpiry).contains(expiry) else {
            throw TokenMintError(issuedAt: issuedAt, ttlSeconds: ttlSeconds)
        }
        return expiry
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

    private static func stamped(
        _ claims: JSONValue, _ issuedAt: Int64, _ ttlSeconds: Int64
    ) throws(TokenMintError) -> JSONValue {
        guard let given = claims.members else { preconditionFailure("claims must be a JSON object") }
        let expiry = try Self.expiry(issuedAt: issuedAt, ttlSeconds: ttlSeconds)
        return .object(
            given.filter { $0.key != "iat" && $0.key != "exp" } + [
                JSONMember("iat", .int(issuedAt)), JSONMember("exp", .int(expiry)),
            ])
    }
}
