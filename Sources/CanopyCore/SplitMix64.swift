// SplitMix64 -- a tiny deterministic random number generator, so fuzz tests, property tests and benchmark data
// reproduce from a seed.

/// SplitMix64 (Steele, Lea and Flood): fast, 64-bit state, good enough statistics for test and benchmark data.
/// Not for secrets — use `SystemRandomNumberGenerator` or OpenSSL for those.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (slightly biased for huge bounds; fine for tests).
    public mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
