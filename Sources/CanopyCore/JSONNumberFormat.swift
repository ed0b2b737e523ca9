// JSONNumberFormat -- doubles printed exactly as JavaScript's `Number.prototype.toString` prints them.
//
// ECMAScript Number::toString: take the shortest digit string s (k digits) and exponent n with
// value = 0.s × 10^n that round-trips, then
//   k ≤ n ≤ 21   → s followed by n−k zeros             (1e20 → "100000000000000000000")
//   0 < n ≤ 21   → s with a point after n digits      (1.5)
//   −6 < n ≤ 0   → "0." then −n zeros then s          (0.000001)
//   otherwise    → d[.ddd]e±(n−1)                     (1e+21, 1e-7, 1.5e+300)
// -0 prints as "0". NaN and ±infinity are not JSON; they print as "null" (as JSON.stringify does).
// Swift's `Double.description` already yields the shortest round-trip digits; we only re-layout them.

/// Formats numbers the way JavaScript (and therefore Firebase clients) print them.
public enum JSONNumberFormat {
    /// The JavaScript `String(value)` text of a finite double; "null" for NaN and infinities.
    public static func text(_ value: Double) -> String {
        var bytes: [UInt8] = []
        write(value, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the JavaScript text of `value` to `out` ("null" for NaN and infinities).
    public static func write(_ value: Double, into out: inout [UInt8]) {
        guard value.isFinite else {
            out.append(contentsOf: "null".utf8)
            return
        }
        if value == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        if value == value.rounded(.towardZero) && value.magnitude < 1e15 {
            appendInteger(Int64(value), into: &out)
            return
        }
        let (digits, n) = shortestDigits(value.magnitude)
        if value < 0 { out.append(UInt8(ascii: "-")) }
        let k = digits.count
        let zero = UInt8(ascii: "0")
        if k <= n && n <= 21 {
            out.append(contentsOf: digits)
            out.append(contentsOf: repeatElement(zero, count: n - k))
        } else if 0 < n && n <= 21 {
            out.append(contentsOf: digits[..<n])
            out.append(UInt8(ascii: "."))
            out.append(contentsOf: digits[n...])
        } else if -6 < n && n <= 0 {
            out.append(zero)
            out.append(UInt8(ascii: "."))
            out.append(contentsOf: repeatElement(zero, count: -n))
            out.append(contentsOf: digits)
        } else {
            out.append(digits[0])
            if k > 1 {
                out.append(UInt8(ascii: "."))
                out.append(contentsOf: digits[1...])
            }
            out.append(UInt8(ascii: "e"))
            out.append(UInt8(ascii: n - 1 < 0 ? "-" : "+"))
            appendInteger(Int64((n - 1).magnitude), into: &out)
        }
    }

    /// Appends the decimal text of `value`.
    static func appendInteger(_ value: Int64, into out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in  // UInt64.max has 20 digits
            var i = digits.count
            repeat {
                i -= 1
                digits[i] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i...]))
        }
    }

    /// Shortest round-trip significant digits of a positive finite double, and n with value = 0.digits × 10^n.
    private static func shortestDigits(_ value: Double) -> (digits: [UInt8], n: Int) {
        // `description` is "ddd.ddd", "0.000ddd" or "d.ddde±x".
        var digits: [UInt8] = []
        var pointPosition: Int? = nil
        var exponent = 0
        var exponentNegative = false
        var inExponent = false
        for b in value.description.utf8 {
            switch b {
            case UInt8(ascii: "."): pointPosition = digits.count
            case UInt8(ascii: "e"): inExponent = true
            case UInt8(ascii: "-"): exponentNegative = true
            case UInt8(ascii: "+"): break
            default:
                if inExponent {
                    exponent = exponent * 10 + Int(b - UInt8(ascii: "0"))
                } else {
                    digits.append(b)
                }
            }
        }
        var n = (pointPosition ?? digits.count) + (exponentNegative ? -exponent : exponent)
        let firstNonZero = digits.firstIndex { $0 != UInt8(ascii: "0") } ?? 0
        n -= firstNonZero
        var end = digits.count
        while end > firstNonZero + 1 && digits[end - 1] == UInt8(ascii: "0") { end -= 1 }
        return (Array(digits[firstNonZero..<end]), n)
    }
}
