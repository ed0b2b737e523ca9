// Credentials -- the admin credential, the token signing secret, and turning a request's credential into an Identity.

import CanopyAuth
import CanopyCore

/// Why a credential was refused (REST 401).
public struct CredentialError: CanopyError {
    public let message: String
    public var code: String { "invalid_credential" }
    public var userMessage: String { message }
}

/// The daemon's secrets and token verifier.
public final class Credentials: Sendable {
    /// File holding the admin credential (mode 0600).
    public let adminCredentialPath: String
    /// File holding the HS256 signing secret (mode 0600).
    public let signingSecretPath: String
    let adminCredential: String
    let signingSecret: [UInt8]
    let verifier: TokenVerifier
    /// Emulator mode only: reads unsigned mock tokens, ignoring their times (see `identify(credential:namespace:)`).
    let mockTokenReader: TokenVerifier?
    let emulator: Bool
    let clock: any WallClock
    /// `--allow-tokens-without-exp`.
    let allowsTokensWithoutExpiry: Bool

    /// The database secret of Firebase's legacy tokens (the base64url text of the HS256 signing secret): older
    /// server libraries sign with it (`canopy token secret` prints it).
    public let databaseSecret: String

    public init(configuration: ServerConfiguration) throws {
        adminCredentialPath = configuration.dataDirectory + "/admin.credential"
        signingSecretPath = configuration.dataDirectory + "/signing.key"
        adminCredential = Base64.encode(
            try SecretFile.loadOrCreate(path: adminCredentialPath, byteCount: 32), url: true, padding: false)
        signingSecret = try SecretFile.loadOrCreate(path: signingSecretPath, byteCount: 32)
        databaseSecret = Base64.encode(signingSecret, url: true, padding: false)
        var keys = [VerificationKey.hmac(secret: signingSecret), VerificationKey.hmac(secret: Array(databaseSecret.utf8))]
        for file in configuration.publicKeyFiles {
            let text = try readTextFile(file)
            if text.contains("-----BEGIN") {
                keys += try VerificationKey.publicKeys(pem: text)
            } else {
                keys += try VerificationKey.jwks(json: text)
            }
        }
        emulator = configuration.emulator
        clock = configuration.clock
        allowsTokensWithoutExpiry = configuration.allowTokensWithoutExpiry
        verifier = TokenVerifier(keys: keys, clock: configuration.clock, allowUnsigned: configuration.emulator)
        mockTokenReader =
            configuration.emulator ? TokenVerifier(keys: [], clock: EpochClock(), allowUnsigned: true) : nil
    }

    /// Signs a token with the daemon's secret (used by tests and `canopy token mint` against a data directory).
    /// - Throws: ``TokenMintError`` when `now / 1000 + ttlSeconds` is not a time a token may expire at.
    public func mint(claims: JSONValue, ttlSeconds: Int64, now: Int64) throws(TokenMintError) -> String {
        try TokenMinter.mintHS256(
            claims: claims, secret: signingSecret, issuedAt: now / 1000, ttlSeconds: ttlSeconds)
    }

    /// The admin credential's text (for tests and the CLI running on the same machine).
    public var adminSecret: String { adminCredential }

    /// Resolves the identity a request acts as.
    ///
    /// - Parameters:
    ///   - bearer: the `Authorization: Bearer` value, if any.
    ///   - authParam: the `auth=` (or `access_token=`) query value, if any.
    ///   - override: the `auth_variable_override` query value, if any (admin credential only).
    ///   - namespace: the namespace the request is for (a token's `ns` claim must allow it).
    public func identify(bearer: String?, authParam: String?, override: String?, namespace: String)
        throws(CredentialError) -> Identity
    {
        var identity = Identity.anonymous
        for credential in [bearer, authParam] {
            guard let credential, !credential.isEmpty else { continue }
            identity = try identify(credential: credential, namespace: namespace)
            if identity.isAdmin { break }
        }
        if let override {
            guard identity.isAdmin else {
                throw CredentialError(message: "auth_variable_override requires the admin credential.")
            }
            guard let value = try? JSONValue.parse(override) else {
                throw CredentialError(message: "auth_variable_override is not valid JSON.")
            }
            switch value {
            case .null: return .anonymous
            case .object: return .user(auth: value, expiresAt: nil)
            default: throw CredentialError(message: "auth_variable_override must be a JSON object or null.")
            }
        }
        return identity
    }

    /// Resolves one credential string: the admin credential, `owner` in emulator mode, or a JWT.
    public func identify(credential: String, namespace: String) throws(CredentialError) -> Identity {
        if constantTimeEqual(credential, adminCredential) { return .admin }
        if emulator && credential == "owner" { return .admin }
        let token: VerifiedToken
        do {
            token = try verifier.verify(credential)
        } catch {
            // The JS SDK's emulator mock tokens (alg "none") carry times relative to 0 (`iat: 0, exp: 3600`);
            // the Firebase emulator accepts them regardless, so emulator mode does too, and never expires them.
            if let mock = try? mockTokenReader?.verify(credential), mock.algorithm == nil {
                guard mock.allows(namespace: namespace) else {
                    throw CredentialError(message: "This token is not valid for namespace '\(namespace)'.")
                }
                return .user(auth: mock.rulesAuth, expiresAt: nil)
            }
            throw CredentialError(message: "Could not parse auth token: \(error.userMessage)")
        }
        guard token.allows(namespace: namespace) else {
            throw CredentialError(message: "This token is not valid for namespace '\(namespace)'.")
        }
        if token.isLegacy { return try legacyIdentity(token) }
        // A signed token without `exp` would never expire: refused unless the operator allows it. (Unsigned
        // emulator tokens are the emulator's business.)
        if token.expiresAt == nil, token.algorithm != nil, !allowsTokensWithoutExpiry {
            throw CredentialError(
                message: "Could not parse auth token: the token has no 'exp' claim (see --allow-tokens-without-exp).")
        }
        return .user(auth: token.rulesAuth, expiresAt: token.expiresAt)
    }

    /// When a token whose `exp` is `expiresAt` (ms) stops being honoured: `exp` plus the verifier's clock skew.
    ///
    /// One rule everywhere: a token is accepted until `exp` + skew (the verifier's check, on REST, SSE, the wire
    /// protocol and long polling alike), and a session or stream that holds it is revoked at that same moment
    /// (`expired_token` / `auth_revoked`), never sooner: a token that was accepted is never revoked at once.
    /// `Identity.user`'s `expiresAt` is the token's own expiry (what the wire `auth` reply reports); sessions and
    /// streams schedule their revocation at this time instead.
    func revocationTime(_ expiresAt: Int64) -> Int64 {
        expiresAt.addingSaturated(verifier.clockSkewSeconds.multipliedSaturated(by: 1000))
    }

    /// A legacy token's identity, as Firebase gave it: `admin: true` bypasses the rules; otherwise rules see the
    /// payload `d` as `auth` (so `auth.uid` is `d.uid`); a null payload is unauthenticated. Without `exp` it
    /// expires 24 hours after `iat`.
    private func legacyIdentity(_ token: VerifiedToken) throws(CredentialError) -> Identity {
        guard let expiresAt = token.legacyExpiresAt else {
            throw CredentialError(message: "Could not parse auth token: a legacy token needs 'exp' or 'iat'")
        }
        // A token with `exp` was checked by the verifier; one without expires 24 hours after it was issued.
        if token.expiresAt == nil, clock.nowMilliseconds() >= revocationTime(expiresAt) {
            throw CredentialError(message: "Could not parse auth token: token expired")
        }
        if token.claims["admin"]?.boolValue == true { return .admin }
        guard let payload = token.claims["d"], payload.members != nil else { return .anonymous }
        return .user(auth: payload, expiresAt: expiresAt)
    }
}

/// Compares two strings without an early exit, so timing does not reveal a prefix of the secret.
func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    var a = a
    var b = b
    // In place (every request compares its credential with the admin one): no copies of either.
    return a.withUTF8 { x in
        b.withUTF8 { y in
            var diff = UInt8(x.count == y.count ? 0 : 1)
            for i in 0..<min(x.count, y.count) { diff |= x[i] ^ y[i] }
            return diff == 0
        }
    }
}

/// Reads a whole text file (key files, seeds); throws a `CredentialError` naming the path and the reason.
public func readTextFile(_ path: String) throws -> String {
    do {
        return try readFileContents(path)
    } catch {
        throw CredentialError(message: "cannot read '\(path)': \(error.reason)")
    }
}

/// Why `readFileContents` failed: the system's message ("No such file or directory", "Is a directory").
struct FileReadError: Error {
    let reason: String
}

/// Reads a whole text file. A read error (not only a failed open) is an error, never a short or empty text: a
/// directory opens for reading on Linux, and only its first read fails.
func readFileContents(_ path: String) throws(FileReadError) -> String {
    guard let file = fopen(path, "rb") else { throw FileReadError(reason: String(cString: strerror(errno))) }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = fread(&buffer, 1, buffer.count, file)
        if n <= 0 { break }
        bytes += buffer[0..<n]
    }
    if ferror(file) != 0 { throw FileReadError(reason: String(cString: strerror(errno))) }
    return String(decoding: bytes, as: UTF8.self)
}

#if canImport(Glibc)
    import Glibc
#endif

/// A clock stuck at the Unix epoch (for reading emulator mock tokens, whose times start at 0).
struct EpochClock: WallClock {
    func nowMilliseconds() -> Int64 { 0 }
}
