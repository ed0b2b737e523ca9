// TokenMintError -- why a token could not be minted: its lifetime puts `exp` outside the times Canopy signs.

import CanopyCore

/// A lifetime that would make a token expire later than ``TokenMinter/latestExpiry`` (or before the epoch).
///
/// The minter refuses such a token instead of trapping on the overflow of `iat + ttl` or signing a date no
/// calendar shows (`canopy token mint --ttl 9223372036854775807`).
public struct TokenMintError: CanopyError, Equatable {
    /// The requested `iat`, in seconds since the epoch.
    public let issuedAt: Int64
    /// The requested lifetime, in seconds.
    public let ttlSeconds: Int64

    public var code: String { "invalid_lifetime" }

    public var userMessage: String {
        let longest = max(0, TokenMinter.latestExpiry.subtractingSaturated(issuedAt))
        return "A token lifetime of \(ttlSeconds) seconds is out of range: a token must expire after the epoch "
            + "and no later than 9999-12-31T23:59:59Z (now at most \(longest) seconds, about "
            + "\(longest / 31_556_952) years)."
    }

    public var description: String { "TokenMintError(\(code)): iat \(issuedAt), ttl \(ttlSeconds)" }
}
