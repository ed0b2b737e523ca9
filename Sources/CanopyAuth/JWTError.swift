// JWTError -- why a token or a key was refused.

import CanopyCore

/// A token that failed verification, or a key that could not be loaded.
///
/// `reason` states a fact about the input ("token has 2 parts", "kid 'k1' is not configured")
/// and never contains the token, its claims or key material. `code` uses the Firebase
/// realtime protocol's status names so the server can pass it through:
/// `expired_token` for ``Kind/expired``, `invalid_token` for any other token problem and
/// `invalid_key` for key-loading problems.
public struct JWTError: CanopyError, Equatable {
    /// The class of failure.
    public enum Kind: String, Sendable, Equatable {
        /// Not a well-formed compact JWS: part count, size, base64url, JSON or claim types.
        case malformed
        /// The header `alg` is not accepted (`none` without emulator mode, or no key of that algorithm).
        case algorithmNotAllowed
        /// The header names a `kid` that no configured key has.
        case unknownKey
        /// No candidate key verifies the signature.
        case badSignature
        /// `exp` is in the past (beyond the allowed clock skew).
        case expired
        /// `nbf` or `iat` is in the future (beyond the allowed clock skew).
        case notYetValid
        /// `aud` does not contain the configured audience.
        case audienceMismatch
        /// `iss` is not the configured issuer.
        case issuerMismatch
        /// A key (PEM, JWKS or secret) could not be loaded or is too weak.
        case invalidKey
    }

    /// The class of failure.
    public let kind: Kind
    /// A fact about the input; never token contents or key material.
    public let reason: String

    /// Creates an error of `kind` explained by `reason`.
    public init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var code: String {
        switch kind {
        case .expired: "expired_token"
        case .invalidKey: "invalid_key"
        default: "invalid_token"
        }
    }

    public var userMessage: String {
        switch kind {
        case .expired: "Auth token is expired."
        case .invalidKey: "Invalid key: \(reason)."
        default: "Invalid auth token: \(reason)."
        }
    }

    public var description: String { "JWTError(\(kind.rawValue)): \(reason)" }

    static func malformed(_ reason: String) -> JWTError { JWTError(.malformed, reason) }
    static func invalidKey(_ reason: String) -> JWTError { JWTError(.invalidKey, reason) }
}
