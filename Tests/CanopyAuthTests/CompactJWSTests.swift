// CompactJWSTests -- malformed tokens become typed errors, never crashes.

import CanopyCore
import Testing

@testable import CanopyAuth

@Suite struct CompactJWSTests {
    typealias F = Fixtures
    static let good = try! TokenMinter.mintHS256(claims: F.claims, secret: F.secret, issuedAt: F.now, ttlSeconds: 60)
    static let parts = good.split(separator: ".").map(String.init)
    static let hs256Header = F.base64url(#"{"alg":"HS256"}"#)

    /// A token whose signature is valid for its (possibly odd) header and payload text.
    static func signed(header: String, payload: String) -> String {
        let input = header + "." + payload
        return input + "."
            + Base64.encode(HMACSHA256.authenticate(Array(input.utf8), key: F.secret), url: true, padding: false)
    }

    static let malformed: [String] = {
        let (h, p, sig) = (parts[0], parts[1], parts[2])
        var list: [String] = ["", ".", "..", "...", "a.b", "a.b.c.d"]
        list.append(h + "." + p)  // 2 parts
        list.append(good + ".")  // 4 parts
        list.append(h + "=." + p + "." + sig)  // padding
        list.append(h + "." + p + "." + sig + "=")
        list.append(String(h.map { $0 == "J" ? "+" : $0 }) + "." + p + "." + sig)  // standard alphabet
        list.append("!!!." + p + "." + sig)
        list.append(" " + good)
        list.append(good + "\n")
        let badHeaders: [String] = [
            "not json", "[1,2]", #"{"alg":256}"#, #"{"typ":"JWT"}"#, #"{"alg":"HS256","alg":"HS256"}"#,
        ]
        for header in badHeaders { list.append(F.base64url(header) + "." + p + "." + sig) }
        list.append(String(repeating: "A", count: 16 * 1024 + 1))
        list.append(h + "." + String(repeating: "A", count: 17 * 1024) + "." + sig)
        // Signed correctly, but the payload is bad.
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        let badPayloads: [String] = ["[]", "\"claims\"", "{", #"{"a":1,"a":2}"#, deep]
        for payload in badPayloads { list.append(signed(header: hs256Header, payload: F.base64url(payload))) }
        list.append(signed(header: hs256Header, payload: ""))
        list.append(signed(header: hs256Header, payload: "e30="))  // "{}" padded
        return list
    }()

    @Test(arguments: malformed)
    func malformedTokensAreTypedErrors(token: String) {
        let kind = jwtErrorKind { try F.verifier([.hmac(secret: F.secret)]).verify(token) }
        #expect(kind == .malformed)
    }

    @Test func theUnmodifiedTokenIsFine() throws {
        #expect(try F.verifier([.hmac(secret: F.secret)]).verify(Self.good).claims["tierId"] == "55")
        #expect(
            try F.verifier([.hmac(secret: F.secret)]).verify(Self.signed(header: Self.hs256Header, payload: "e30"))
                .claims == [:])
    }

    @Test func wrongSignatureLengthIsABadSignature() {
        let token = Self.parts[0] + "." + Self.parts[1] + "." + String(Self.parts[2].dropLast(4))
        #expect(jwtErrorKind { try F.verifier([.hmac(secret: F.secret)]).verify(token) } == .badSignature)
    }

    /// Bounded random mutation: every variant must verify or throw a JWTError, never crash.
    @Test func mutatedTokensNeverCrash() throws {
        let rsaToken = try TokenMinter.mint(claims: F.claims, key: F.rsa, issuedAt: F.now, ttlSeconds: 60)
        let verifier = F.verifier(
            [.hmac(secret: F.secret)] + (try! VerificationKey.publicKeys(pem: F.rsa.publicKeyPEM)),
            allowUnsigned: true)
        var generator = SplitMix(seed: 0x5eed)
        let alphabet = Array("ABCxyz019-_.=+/ {}\"".utf8)
        var accepted = 0
        for seed in [Self.good, rsaToken] {
            for _ in 0..<1500 {
                var bytes = Array(seed.utf8)
                for _ in 0..<(1 + Int(generator.next() % 3)) {
                    let position = Int(generator.next() % UInt64(bytes.count))
                    switch generator.next() % 3 {
                    case 0: bytes[position] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                    case 1: bytes.remove(at: position)
                    default: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: position)
                    }
                }
                let variant = String(decoding: bytes, as: UTF8.self)
                if (try? verifier.verify(variant)) != nil, Array(variant.utf8) != Array(seed.utf8) { accepted += 1 }
            }
        }
        // Only a mutation that undoes itself may verify: strict base64url leaves no spare bits to flip.
        #expect(accepted == 0)
    }
}

/// The shared deterministic generator (CanopyCore).
typealias SplitMix = SplitMix64
