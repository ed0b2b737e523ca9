// Base64Tests -- RFC 4648 vectors, url variant, and strict rejection.

import Testing

@testable import CanopyCore

@Suite struct Base64Tests {
    static let vectors: [(String, String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy"),
    ]

    @Test(arguments: vectors)
    func rfc4648Vectors(plain: String, encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded, url: false) == Array(plain.utf8))
        let unpadded = String(encoded.prefix { $0 != "=" })
        #expect(Base64.encode(Array(plain.utf8), url: true, padding: false) == unpadded)
        #expect(Base64.decode(unpadded, url: true) == Array(plain.utf8))
        #expect(Base64.decode(encoded, url: true) == Array(plain.utf8))
    }

    @Test func urlAlphabet() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(Base64.encode(bytes) == "+/+/")
        #expect(Base64.encode(bytes, url: true) == "-_-_")
        #expect(Base64.decode("-_-_", url: true) == bytes)
        #expect(Base64.decode("-_-_", url: false) == nil)
        #expect(Base64.decode("+/+/", url: true) == nil)
    }

    @Test(arguments: [
        "Zg", "Zg=", "Zm8", "Zg===", "Z", "Z===", "=", "==", "Zm9v=", "Zh==", "Zm9=",
        "Zm 9v", "Zm9v\n", "Zm9\u{E9}", "Zg==Zg==", "Z=g=",
    ])
    func standardRejects(_ text: String) {
        #expect(Base64.decode(text, url: false) == nil)
    }

    @Test(arguments: ["Z", "Zh", "Zm9", "Zg=", "Zg===", "Zm9v=", "a+b/", "Z=g="])
    func urlRejects(_ text: String) {
        #expect(Base64.decode(text, url: true) == nil)
    }

    @Test func roundTripsAllLengths() {
        var bytes: [UInt8] = []
        for n in 0..<70 {
            for url in [false, true] {
                for padding in [false, true] where !(padding == false && url == false) {
                    let text = Base64.encode(bytes, url: url, padding: padding)
                    #expect(Base64.decode(text, url: url) == bytes)
                }
            }
            bytes.append(UInt8(truncatingIfNeeded: n &* 37 &+ 11))
        }
    }
}
