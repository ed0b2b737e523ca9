// TokenMintError -- why a token could not be minted: its lifetime puts `exp` outside the times Canopy signs, or
// its claims would make a token that `TokenVerifier` refuses (nested too deeply, too large).

import CanopyCore

/// A lifetime that would make a token expire later than ``TokenMinter/latestExpiry`` (or before the epoch), or
/// claims no verifier would accept.
///
/// The minter refuses such a token instead of trapping on the overflow of `iat + ttl`, signing a date no
/// calendar shows (`canopy token mint --ttl 9223372036854775807`) or handing out a token every server refuses
/// (`--claims` nested deeper than 32 levels, or a token over 16 KiB).
public struct TokenMintError: CanopyError, Equatable {
    /// The requested `iat`, in seconds since the epoch.
    public let issuedAt: Int64
    /// The requested lifetime, in seconds.
    public let ttlSeconds: Int64
    /// Why the claims cannot be carried by a token the verifier accepts; nil when the lifetime is the problem.
    public let claimsProblem: String?

    /// A lifetime out of range.
    public init(issuedAt: Int64, ttlSeconds: Int64) {
        self.issuedAt = issuedAt
        self.ttlSeconds = ttlSeconds
        self.claimsProblem = nil
    }

    /// Claims that would make a token the verifier refuses, for the reason it gives.
    init(claimsProblem: String, issuedAt: Int64, ttlSeconds: Int64) {
        self.issuedAt = issuedAt
        self.ttlSeconds = ttlSeconds
        self.claimsProblem = claimsProblem
    }

    public var code: String { claimsProblem == nil ? "invalid_lifetime" : "invalid_claims" }

    public var userMessage: String {
        if let claimsProblem { return "These claims cannot be minted: a server would refuse the token (\(claimsProblem))." }
        let longest = max(0, TokenMinter.latestExpiry.subtractingSaturated(issuedAt))
        return "A token lifetime of \(ttlSeconds) seconds is out of range: a token must expire after the epoch "
            + "and no later than 9999-12-31T23:59:59Z (now at most \(longest) seconds, about "
            + "\(longest / 31_556_952) years)."
    }

    public var description: String {
        "TokenMintError(\(code)): iat \(issuedAt), ttl \(ttlSeconds)" + (claimsProblem.map { ", \($0)" } ?? "")
    }
}
