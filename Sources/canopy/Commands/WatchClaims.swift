// WatchClaims -- the claims of a JWT read locally (no verification: the server verifies; the watcher only needs
// to know whose feed to assemble).

import CanopyCore
import CanopyPublish

/// The payload of a compact JWS (`header.payload.signature`), decoded but not verified.
enum WatchClaims {
    /// The longest token accepted (a token is a few hundred bytes; this bounds the decoding work).
    static let maxTokenLength = 64 * 1024

    /// The token's claims object.
    /// - Throws: `CommandFailure` when the token is not three base64url parts with a JSON object in the middle.
    static func claims(of token: String) throws(CommandFailure) -> JSONValue {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count <= maxTokenLength, parts.count == 3,
            let bytes = Base64.decode(parts[1], url: true),
            let payload = try? JSONValue.parse(String(decoding: bytes, as: UTF8.self)),
            case .object = payload
        else {
            throw CommandFailure("the token cannot be read: expected a JWT (header.payload.signature) with JSON claims")
        }
        return payload
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
