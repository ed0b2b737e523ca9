// WatchClaims -- the claims of a JWT read locally (no verification: the server verifies; the watcher only needs
// to know whose feed to assemble).

import CanopyAuth
import CanopyCore
import CanopyPublish

/// The claims of the watcher's token, decoded but not verified (`CanopyAuth.UnverifiedClaims`).
enum WatchClaims {
    /// The token's claims object.
    /// - Throws: `CommandFailure` when the token is not three base64url parts with a JSON object in the middle.
    static func claims(of token: String) throws(CommandFailure) -> JSONValue {
        do {
            return try UnverifiedClaims.of(token)
        } catch {
            throw CommandFailure("the token cannot be read: expected a JWT (header.payload.signature) with JSON claims")
        }
    }

    /// The attendee named by the token's claims (`userId`, `tierId`, `groups`).
    /// - Throws: `CommandFailure` when the token cannot be read or carries no usable `userId`.
    static func attendee(of token: String) throws(CommandFailure) -> (attendee: Attendee, namespace: String?) {
        let payload = try claims(of: token)
        guard let attendee = Attendee(claims: payload) else {
            throw CommandFailure(
                "the token has no attendee claims (userId); mint one with 'canopy token mint --attendee'")
        }
        return (attendee, payload["ns"]?.stringValue)
    }
}
