// CompactJWS -- splits and decodes JWS compact serialization (RFC 7515 §7.1), strictly.
//
// A token is `BASE64URL(header) "." BASE64URL(payload) "." BASE64URL(signature)`: exactly
// three parts, unpadded base64url (no '=', no whitespace, no standard-alphabet '+' '/'), and
// the signature covers the ASCII bytes `header "." payload` exactly as received. The header
// and payload must be JSON objects. Size and nesting are bounded before anything is parsed.

import CanopyCore

/// The decoded parts of a compact JWS whose signature has not been checked yet.
struct CompactJWS {
    /// The largest token accepted, in bytes of its compact form.
    static let maximumBytes = 16 * 1024
    /// The deepest nesting allowed in the header and claims.
    static let maximumDepth = 32

    /// The header object.
    let header: JSONValue
    /// The still-encoded payload part, decoded only after the signature checks out.
    let encodedPayload: Substring.UTF8View
    /// The bytes the signature covers: `header "." payload`.
    let signingInput: [UInt8]
    /// The decoded signature (empty for unsigned tokens).
    let signature: [UInt8]

    /// Splits `token` and decodes its header and signature.
    ///
    /// - Throws: ``JWTError`` of kind `malformed` naming the first problem.
    init(_ token: String) throws(JWTError) {
        let utf8 = token.utf8
        guard utf8.count <= Self.maximumBytes else { throw .malformed("token is larger than 16 KiB") }
        guard !utf8.isEmpty else { throw .malformed("token is empty") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("token has \(parts.count) parts, expected 3") }
        guard let headerBytes = Self.decodeBase64URL(parts[0]), !headerBytes.isEmpty else {
            throw .malformed("header is not unpadded base64url")
        }
        header = try Self.object(headerBytes, "header")
        guard let signature = Self.decodeBase64URL(parts[2]) else {
            throw .malformed("signature is not unpadded base64url")
        }
        self.signature = signature
        encodedPayload = parts[1].utf8
        signingInput = Array(utf8[..<parts[1].endIndex])
    }

    /// Decodes the payload into the claims object (call after the signature is checked).
    func claims() throws(JWTError) -> JSONValue {
        guard let bytes = Self.decodeBase64URL(Substring(encodedPayload)), !bytes.isEmpty else {
            throw .malformed("payload is not unpadded base64url")
        }
        return try Self.object(bytes, "claims")
    }

    /// Decodes unpadded base64url; nil for padding, other alphabets or bad trailing bits.
    static func decodeBase64URL(_ text: some StringProtocol) -> [UInt8]? {
        guard !text.utf8.contains(UInt8(ascii: "=")) else { return nil }
        return Base64.decode(text, url: true)
    }

    /// Encodes unpadded base64url.
    static func encodeBase64URL(_ bytes: some Collection<UInt8>) -> String {
        Base64.encode(bytes, url: true, padding: false)
    }

    fileprivate static func object(_ bytes: [UInt8], _ what: String) throws(JWTError) -> JSONValue {
        let value: JSONValue
        do {
            value = try JSONValue.parse(
                bytes, options: JSONParseOptions(maxDepth: maximumDepth, maxBytes: maximumBytes))
        } catch {
            throw .malformed("\(what) is not valid JSON (\(error.reason))")
        }
        guard value.members != nil else { throw .malformed("\(what) is not a JSON object") }
        return value
    }
}

/// Reading a token's claims without verifying it — for clients that only need to know whose token they hold
/// (the server verifies every token it is given).
public enum UnverifiedClaims {
    /// The claims object of a compact JWS, its payload decoded as strictly as a verified one's; the header and
    /// signature parts are not looked at.
    /// - Throws: ``JWTError`` (`malformed`) when the token is not three parts with a JSON object payload.
    public static func of(_ token: String) throws(JWTError) -> JSONValue {
        guard token.utf8.count <= CompactJWS.maximumBytes else { throw .malformed("token is larger than 16 KiB") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("token has \(parts.count) parts, expected 3") }
        guard let bytes = CompactJWS.decodeBase64URL(parts[1]), !bytes.isEmpty else {
            throw .malformed("payload is not unpadded base64url")
        }
        return try CompactJWS.object(bytes, "claims")
    }
}
