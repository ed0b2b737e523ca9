// Duration -- parses the token lifetimes people type on the command line ("8h", "30m", "2d").

/// Parses a duration into seconds.
///
/// Accepted forms: a plain non-negative integer (seconds), or a sequence of integer+unit parts
/// with units `d`, `h`, `m`, `s` in that order, each at most once (`"8h"`, `"1h30m"`, `"45s"`, `"2d"`).
/// Nothing else is accepted: no signs, spaces, fractions or empty input.
///
/// - Returns: The duration in seconds, or nil if `text` is not a duration or overflows `Int64`.
public func parseDuration(_ text: String) -> Int64? {
    let units: [(unit: Character, seconds: Int64)] = [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)]
    guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
    if text.allSatisfy(\.isASCIIDigit) { return Int64(text) }
    var total: Int64 = 0
    var digits = ""
    var nextUnit = 0  // index into `units`; units must appear in decreasing size, once each
    for character in text {
        if character.isASCIIDigit {
            digits.append(character)
            continue
        }
        guard !digits.isEmpty, let value = Int64(digits),
            let index = units[nextUnit...].firstIndex(where: { $0.unit == character })
        else { return nil }
        let (scaled, overflow) = value.multipliedReportingOverflow(by: units[index].seconds)
        let (sum, overflowSum) = total.addingReportingOverflow(scaled)
        guard !overflow, !overflowSum else { return nil }
        total = sum
        digits = ""
        nextUnit = index + 1
    }
    return digits.isEmpty ? total : nil
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
