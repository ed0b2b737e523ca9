// SaturatingArithmeticTests -- sums, differences, products and double conversions clamp at the bounds, never trap.

import Testing

@testable import CanopyCore

@Suite struct SaturatingArithmeticTests {
    @Test(arguments: [
        (Int64.max, 1, Int64.max), (Int64.max, Int64.max, Int64.max), (Int64.min, -1, Int64.min),
        (Int64.min, Int64.min, Int64.min), (Int64.max, Int64.min, -1), (40, 2, 42), (-40, -2, -42),
    ] as [(Int64, Int64, Int64)])
    func addition(a: Int64, b: Int64, sum: Int64) {
        #expect(a.addingSaturated(b) == sum)
        #expect(b.addingSaturated(a) == sum)
    }

    @Test(arguments: [
        (Int64.max, -1, Int64.max), (Int64.min, 1, Int64.min), (Int64.max, Int64.min, Int64.max),
        (Int64.min, Int64.max, Int64.min), (0, Int64.min, Int64.max), (-1, Int64.min, Int64.max), (50, 8, 42),
    ] as [(Int64, Int64, Int64)])
    func subtraction(a: Int64, b: Int64, difference: Int64) {
        #expect(a.subtractingSaturated(b) == difference)
    }

    @Test(arguments: [
        (Int64.max, 2, Int64.max), (Int64.min, 2, Int64.min), (Int64.max, -2, Int64.min), (Int64.min, -1, Int64.max),
        (-6, -7, 42), (6, -7, -42), (0, Int64.min, 0),
    ] as [(Int64, Int64, Int64)])
    func multiplication(a: Int64, b: Int64, product: Int64) {
        #expect(a.multipliedSaturated(by: b) == product)
        #expect(b.multipliedSaturated(by: a) == product)
    }

    /// Unsigned values saturate at 0 below and at `max` above (the event loop's nanosecond deadlines).
    @Test func unsignedBounds() {
        #expect(UInt64(3).subtractingSaturated(5) == 0)
        #expect(UInt64.max.addingSaturated(1) == .max)
        #expect(UInt64(9_223_372_036_854_776).multipliedSaturated(by: 1_000_000) == .max)
        #expect(UInt64(18_446_744_073_709).multipliedSaturated(by: 1_000_000) == 18_446_744_073_709_000_000)
    }

    @Test(arguments: [
        (1e308, Int64.max), (-1e308, Int64.min), (Double.infinity, Int64.max), (-Double.infinity, Int64.min),
        (9_223_372_036_854_775_808.0, Int64.max), (-9_223_372_036_854_775_808.0, Int64.min), (2.9, 2), (-2.1, -3),
        (0, 0),
    ] as [(Double, Int64)])
    func fromDouble(value: Double, expected: Int64) {
        #expect(Int64(saturating: value) == expected)
    }

    @Test func notANumberHasNoInteger() {
        #expect(Int64(saturating: .nan) == nil)
        #expect(Int32(saturating: 1e10) == .max)
        #expect(UInt64(saturating: -1) == 0)
    }
}
