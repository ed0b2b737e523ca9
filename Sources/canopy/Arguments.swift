// Arguments -- a small hand-written argument reader in the shape of swift-argument-parser.

import CanopyCore

/// A usage mistake: printed with the command's usage line, exit status 64 (EX_USAGE).
struct UsageError: CanopyError {
    let message: String
    var code: String { "usage" }
    var userMessage: String { message }

    static func unknownOption(_ option: String, command: String) -> UsageError {
        UsageError(message: "unknown option '\(option)' for 'canopy \(command)'")
    }
    static func missingValue(_ option: String) -> UsageError {
        UsageError(message: "option '\(option)' needs a value")
    }
    static func invalidValue(_ option: String, _ value: String, expected: String) -> UsageError {
        UsageError(message: "invalid value '\(value)' for '\(option)': expected \(expected)")
    }
    static func missingOption(_ option: String) -> UsageError {
        UsageError(message: "missing required option '\(option)'")
    }
}

/// A failure while running a command: printed as `canopy: error: <message>`, exit status 1.
struct CommandFailure: CanopyError {
    let message: String
    var exitCode: Int32 = 1
    var code: String { "failed" }
    var userMessage: String { message }
    init(_ message: String, exitCode: Int32 = 1) {
        self.message = message
        self.exitCode = exitCode
    }
}

/// The remaining command-line words of one command.
struct Arguments {
    private var words: [String]
    private var index = 0

    init(_ words: [String]) { self.words = words }

    var isEmpty: Bool { index >= words.count }

    /// The names of the options among the words not read yet (`--port 1` and `--port=1` both give `--port`).
    var remainingOptionNames: [String] {
        words[index...].filter { $0.hasPrefix("--") }.map { word in
            word.firstIndex(of: "=").map { String(word[..<$0]) } ?? word
        }
    }

    /// The next word if it is an option (`--name` or `--name=value`); a `=value` part is kept for `value(for:)`.
    mutating func nextOption() throws(UsageError) -> String? {
        guard index < words.count else { return nil }
        let word = words[index]
        guard word.hasPrefix("-"), word != "-" else {
            throw UsageError(message: "unexpected argument '\(word)'")
        }
        index += 1
        if let eq = word.firstIndex(of: "="), word.hasPrefix("--") {
            words.insert(String(word[word.index(after: eq)...]), at: index)
            return String(word[..<eq])
        }
        return word
    }

    /// The next word if it is not an option.
    mutating func nextPositional() -> String? {
        guard index < words.count, !words[index].hasPrefix("--") else { return nil }
        defer { index += 1 }
        return words[index]
    }

    mutating func value(for option: String) throws(UsageError) -> String {
        guard index < words.count else { throw .missingValue(option) }
        defer { index += 1 }
        return words[index]
    }

    mutating func int(for option: String, in range: ClosedRange<Int> = 0...Int.max) throws(UsageError) -> Int {
        let text = try value(for: option)
        guard let v = Int(text), range.contains(v) else {
            throw .invalidValue(option, text, expected: "an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    /// A comma-separated list of integers, each in `range` (`--subscribers 100,1000`).
    mutating func ints(for option: String, in range: ClosedRange<Int>) throws(UsageError) -> [Int] {
        let text = try value(for: option)
        let items = text.split(separator: ",")
        let counts = items.compactMap { Int($0) }
        guard !counts.isEmpty, counts.count == items.count, counts.allSatisfy({ range.contains($0) }) else {
            throw .invalidValue(
                option, text, expected: "a comma-separated list of counts in \(range.lowerBound)...\(range.upperBound)")
        }
        return counts
    }
}

/// One `canopy` subcommand.
protocol Command {
    static var name: String { get }
    static var abstract: String { get }
    static var usage: String { get }
    init(parsing arguments: inout Arguments) throws(UsageError)
    func run() throws
}

/// Reads an environment variable.
func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}

#if canImport(Glibc)
    import Glibc
#endif
