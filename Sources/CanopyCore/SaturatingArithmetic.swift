// SaturatingArithmetic -- integer arithmetic that clamps at the type's bounds instead of trapping.
//
// Swift traps on integer overflow, so a number a client chose (a token's `exp`, a delay computed from it) must
// never reach `+`, `-`, `*` or an `Int(_:)` conversion unchecked. Times and durations are combined with these
// operations instead: a deadline too far to represent becomes the farthest one (never reached), a difference
// too large becomes the largest difference, and a double outside the integer range becomes its nearest bound.

extension FixedWidthInteger {
    /// `self + other`, clamped to `Self.min...Self.max`.
    package func addingSaturated(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other < 0 ? .min : .max
    }

    /// `self - other`, clamped to `Self.min...Self.max`.
    package func subtractingSaturated(_ other: Self) -> Self {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other < 0 ? .max : .min
    }

    /// `self * other`, clamped to `Self.min...Self.max`.
    package func multipliedSaturated(by other: Self) -> Self {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) == (other < 0) ? .max : .min
    }

    /// `value` rounded toward negative infinity and clamped to `Self.min...Self.max`; nil for NaN.
    ///
    /// Unlike `Self(value)`, which traps outside the range, this accepts any double: `1e308` and `+infinity`
    /// become `Self.max`, `-infinity` becomes `Self.min`.
    package init?(saturating value: Double) {
        guard !value.isNaN else { return nil }
        let floor = value.rounded(.down)
        if let exact = Self(exactly: floor) {
            self = exact
        } else {
            self = floor < 0 ? .min : .max
        }
    }
}
