// PublicKeyTests -- key loading (PEM, components), strength checks, and RS256/ES256 verification.

import Testing

@testable import CanopyAuth

@Suite struct PublicKeyTests {
    static let rsa = SigningKey.generate(for: .rs256)
    static let ec = SigningKey.generate(for: .es256)
    static let message = Array("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1MSJ9".utf8)

    @Test(arguments: [JWTAlgorithm.rs256, .es256])
    func signatureFromPrivateKeyVerifiesWithPEMPublicKey(algorithm: JWTAlgorithm) throws {
        let signer = algorithm == .rs256 ? Self.rsa : Self.ec
        let keys = try PublicKey.load(pem: signer.publicKeyPEM)
        let key = try #require(keys.first)
        #expect(keys.count == 1)
        #expect(key.kind.algorithm == algorithm)
        let signature = signer.sign(Self.message)
        #expect(key.isValidSignature(signature, for: Self.message))

        var tamperedMessage = Self.message
        tamperedMessage[3] ^= 1
        #expect(!key.isValidSignature(signature, for: tamperedMessage))
        var tamperedSignature = signature
        tamperedSignature[10] ^= 0x40
        #expect(!key.isValidSignature(tamperedSignature, for: Self.message))
        #expect(!key.isValidSignature(Array(signature.dropLast()), for: Self.message))
        #expect(!key.isValidSignature([], for: Self.message))
    }

    @Test func wrongKeyDoesNotVerify() throws {
        let other = SigningKey.generate(for: .es256)
        let key = try #require(try PublicKey.load(pem: other.publicKeyPEM).first)
        #expect(!key.isValidSignature(Self.ec.sign(Self.message), for: Self.message))
    }

    @Test func severalPEMBlocksLoadInOrder() throws {
        let keys = try PublicKey.load(pem: Self.rsa.publicKeyPEM + "\n" + Self.ec.publicKeyPEM)
        #expect(keys.map(\.kind) == [.rsa, .ecP256])
    }

    @Test(arguments: [
        "",
        "not a pem at all",
        "-----BEGIN PUBLIC KEY-----\n!!!!\n-----END PUBLIC KEY-----\n",
        "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        "-----BEGIN SOMETHING-----\nAAAA\n-----END SOMETHING-----\n",
    ])
    func badPEMIsRefused(pem: String) {
        #expect(throws: JWTError.self) { try PublicKey.load(pem: pem) }
        do {
            _ = try PublicKey.load(pem: pem)
        } catch {
            #expect(error.kind == .invalidKey)
        }
    }

    @Test func componentsRebuildTheSameKeys() throws {
        let rsaParts = Dictionary(uniqueKeysWithValues: Self.rsa.publicComponents.map { ($0.name, $0.bytes) })
        let rsaKey = try PublicKey.rsa(modulus: rsaParts["n"]!, exponent: rsaParts["e"]!)
        #expect(rsaKey.isValidSignature(Self.rsa.sign(Self.message), for: Self.message))

        let ecParts = Dictionary(uniqueKeysWithValues: Self.ec.publicComponents.map { ($0.name, $0.bytes) })
        let ecKey = try PublicKey.ecP256(x: ecParts["x"]!, y: ecParts["y"]!)
        #expect(ecKey.isValidSignature(Self.ec.sign(Self.message), for: Self.message))
    }

    @Test func weakOrInvalidComponentsAreRefused() {
        let short = [UInt8](repeating: 0xC3, count: 128)  // 1024-bit modulus
        #expect(throws: JWTError.invalidKey("RSA keys must have at least 2048 bits")) {
            try PublicKey.rsa(modulus: short, exponent: [1, 0, 1])
        }
        #expect(throws: JWTError.self) {
            try PublicKey.rsa(modulus: [UInt8](repeating: 0xC3, count: 256), exponent: [2])
        }
        #expect(throws: JWTError.self) { try PublicKey.rsa(modulus: [], exponent: [1, 0, 1]) }
        let ecParts = Dictionary(uniqueKeysWithValues: Self.ec.publicComponents.map { ($0.name, $0.bytes) })
        var offCurve = ecParts["y"]!
        offCurve[31] ^= 1
        #expect(throws: JWTError.self) { try PublicKey.ecP256(x: ecParts["x"]!, y: offCurve) }
        #expect(throws: JWTError.self) { try PublicKey.ecP256(x: Array(ecParts["x"]!.dropFirst()), y: ecParts["y"]!) }
    }

    @Test func ecdsaSignatureFormsRoundTrip() throws {
        let raw = Self.ec.sign(Self.message)
        #expect(raw.count == 64)
        let der = try #require(ECDSASignature.der(fromRaw: raw))
        #expect(der.first == 0x30)
        #expect(ECDSASignature.raw(fromDER: der) == raw)
        #expect(ECDSASignature.der(fromRaw: Array(raw.prefix(63))) == nil)
        #expect(ECDSASignature.raw(fromDER: [0x30, 0x02, 0x01]) == nil)
    }
}
