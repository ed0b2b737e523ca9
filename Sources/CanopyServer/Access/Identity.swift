// Identity -- who is asking: the admin credential, a verified token's claims, or nobody.

import CanopyCore

/// The identity a request acts as, resolved once per request (REST) or per `auth` message (socket).
public enum Identity: Sendable {
    /// The admin credential (or the emulator's `owner`): every operation is allowed, rules are bypassed.
    case admin
    /// A verified token or an admin-supplied `auth_variable_override`; rules see `auth`.
    /// `expiresAt` (ms since epoch) is when the token stops being valid, if it expires.
    case user(auth: JSONValue, expiresAt: Int64?)
    /// No credential: rules see `auth == null`.
    case anonymous

    /// The value of the `auth` variable in security rules.
    public var rulesAuth: JSONValue {
        switch self {
        case .admin: return .null
        case .user(let auth, _): return auth
        case .anonymous: return .null
        }
    }

    public var isAdmin: Bool {
        if case .admin = self { return true }
        return false
    }

    /// The admin credential, or a token carrying `admin: true` (an event organiser).
    public var isEventAdmin: Bool {
        switch self {
        case .admin: return true
        case .user(let auth, _): return auth["token"]?["admin"]?.boolValue == true
        case .anonymous: return false
        }
    }

    /// The `uid` of the identity, for logs and publish history ("admin" for the admin credential).
    public var uid: String? {
        switch self {
        case .admin: return "admin"
        case .user(let auth, _): return auth["uid"]?.stringValue
        case .anonymous: return nil
        }
    }
}
