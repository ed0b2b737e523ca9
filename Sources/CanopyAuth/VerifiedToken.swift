// VerifiedToken -- the claims of a token that passed verification, and what rules and namespaces see of them.

import CanopyCore

/// A verified token's claims.
public struct VerifiedToken: Sendable {
    /// All claims, a JSON object.
    public let claims: JSONValue
    /// The algorithm the token was verified with; nil for an unsigned (emulator) token.
    public let algorithm: JWTAlgorithm?

    /// Wraps claims that ``TokenVerifier`` has checked.
    init(claims: JSONValue, algorithm: JWTAlgorithm?) {
        precondition(claims.members != nil, "claims must be a JSON object")
        self.claims = claims
        self.algorithm = algorithm
    }

    /// The user id: the `uid` claim, else `sub`, else `user_id` (Firebase ID tokens carry both of
    /// the last two). Non-string and empty values are skipped.
    public var uid: String? {
        for name in ["uid", "sub", "user_id"] {
            if let value = claims[name]?.stringValue, !value.isEmpty { return value }
        }
        return nil
    }

    /// When the token expires, in milliseconds since the epoch (`exp` × 1000), if it has `exp`.
    ///
    /// Saturating: an `exp` beyond the year 292 million (or `1e308`) gives `Int64.max`, a moment never reached.
    public var expiresAt: Int64? {
        switch claims["exp"] {
        case .int(let seconds)?: return seconds.multipliedSaturated(by: 1000)
        case .double(let seconds)? where seconds.isFinite: return Int64(saturating: seconds * 1000)
        default: return nil
        }
    }

    /// Whether this is a Firebase legacy token: the format of the old token generators (`v` the format version,
    /// `d` the auth payload, `admin` and `debug` flags, optional `exp` / `nbf`), signed with the database secret.
    public var isLegacy: Bool {
        guard claims["v"]?.doubleValue != nil, let members = claims.members else { return false }
        return members.contains { $0.key == "d" }
    }

    /// When a legacy token expires, in ms since the epoch: its `exp`, or 24 hours after `iat` when it has none
    /// (the old generators' default). nil when it has neither.
    public var legacyExpiresAt: Int64? {
        if let exp = expiresAt { return exp }
        guard let iat = claims["iat"]?.doubleValue, iat.isFinite, abs(iat) < 1e12 else { return nil }
        return Int64(iat.rounded(.down)) * 1000 + Self.legacyLifetimeMilliseconds
    }

    /// The lifetime of a legacy token without `exp`.
    public static let legacyLifetimeMilliseconds: Int64 = 24 * 3600 * 1000

    /// Whether the `admin` claim is `true` (the claim `canopy token mint --admin` sets).
    public var isAdmin: Bool { claims["admin"]?.boolValue == true }

    /// Whether the token may be used on `namespace`, according to its `ns` claim.
    ///
    /// No `ns` claim: any namespace. A string: exactly that namespace. An array of strings: any of
    /// them. Anything else (a number, an object, an array holding a non-string) allows nothing.
    /// Names compare by exact UTF-8 bytes.
    public func allows(namespace: String) -> Bool {
        let wanted = Array(namespace.utf8)
        switch claims["ns"] {
        case nil:
            return true
        case .string(let name)?:
            return Array(name.utf8) == wanted
        case .array(let names)?:
            var found = false
            for entry in names {
                guard let name = entry.stringValue else { return false }
                if Array(name.utf8) == wanted { found = true }
            }
            return found
        default:
            return false
        }
    }

    /// The `auth` variable security rules see: `{"uid": …, "provider": …, "token": <all claims>}`.
    ///
    /// `provider` is the `firebase.sign_in_provider` claim when it is a string, else `"custom"`;
    /// `uid` is ``uid`` or null. Claims stay under `token` (rules read `auth.token.tierId`).
    public var rulesAuth: JSONValue {
        let provider = claims["firebase"]?["sign_in_provider"]?.stringValue ?? "custom"
        return .object([
            JSONMember("uid", uid.map(JSONValue.string) ?? .null),
            JSONMember("provider", .string(provider)),
            JSONMember("token", claims),
        ])
    }
}
