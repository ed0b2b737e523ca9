// RandomToken -- unguessable letters-and-digits identifiers (wire session ids, long-poll ids and passwords).

/// Random tokens from the system's cryptographic generator.
enum RandomToken {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)

    /// `count` random letters and digits. Each 64-bit draw gives ten characters (62^10 < 2^64; only the tenth is
    /// slightly biased, which costs far less than a bit of a 32-character token's ~190), so a token takes four
    /// calls into the system generator (each a `getrandom` system call) instead of thirty-two.
    static func alphanumeric(_ count: Int = 32) -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        while bytes.count < count {
            var value = generator.next()
            for _ in 0..<min(10, count - bytes.count) {
                bytes.append(alphabet[Int(value % 62)])
                value /= 62
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
