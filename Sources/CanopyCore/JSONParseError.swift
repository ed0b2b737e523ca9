// JSONParseError -- why and where a JSON document was refused.

/// A JSON document was refused by `JSONValue.parse`.
///
/// Carries the byte offset, a 1-based line and column (column counted in Unicode scalars) and a
/// short reason. Never carries the document's content.
public struct JSONParseError: CanopyError, Equatable {
    /// Why the document was refused.
    public enum Reason: Equatable, Sendable, CustomStringConvertible {
        case emptyInput
        case unexpectedEnd
        /// A byte that cannot start or continue the construct; `expected` names what could.
        case unexpected(expected: String)
        case trailingComma
        case leadingZero
        /// Malformed number, e.g. `1.`, `-`, `1e`.
        case invalidNumber
        /// A number whose magnitude rounds to infinity.
        case numberOutOfRange
        case invalidUTF8
        case controlCharacterInString
        case invalidEscape
        case loneSurrogate
        case duplicateKey
        case trailingGarbage
        case unterminatedComment
        case tooDeep(limit: Int)
        case tooLarge(limit: Int)

        public var description: String {
            switch self {
            case .emptyInput: "empty input"
            case .unexpectedEnd: "unexpected end of input"
            case .unexpected(let expected): "expected \(expected)"
            case .trailingComma: "trailing comma"
            case .leadingZero: "leading zero in number"
            case .invalidNumber: "malformed number"
            case .numberOutOfRange: "number out of range"
            case .invalidUTF8: "invalid UTF-8"
            case .controlCharacterInString: "unescaped control character in string"
            case .invalidEscape: "invalid escape sequence"
            case .loneSurrogate: "unpaired surrogate escape"
            case .duplicateKey: "duplicate object key"
            case .trailingGarbage: "unexpected data after the JSON value"
            case .unterminatedComment: "unterminated comment"
            case .tooDeep(let limit): "nesting deeper than \(limit)"
            case .tooLarge(let limit): "document larger than \(limit) bytes"
            }
        }
    }

    /// Byte offset of the offending byte (or of the end of input).
    public let offset: Int
    /// 1-based line number.
    public let line: Int
    /// 1-based column, counted in Unicode scalars.
    public let column: Int
    /// What went wrong.
    public let reason: Reason

    /// Creates an error; `JSONValue.parse` computes `line` and `column` from `offset`.
    public init(offset: Int, line: Int, column: Int, reason: Reason) {
        self.offset = offset
        self.line = line
        self.column = column
        self.reason = reason
    }

    public var code: String { "invalid_json" }

    public var userMessage: String {
        "Invalid data; couldn't parse JSON object, array, or value (line \(line), column \(column): \(reason))"
    }
}

/// Limits and dialect switches for `JSONValue.parse`.
public struct JSONParseOptions: Sendable, Equatable {
    /// Maximum nesting of arrays and objects; deeper documents are refused.
    public var maxDepth: Int
    /// Maximum document size in bytes; larger documents are refused before parsing.
    public var maxBytes: Int
    /// Accept `// line` and `/* block */` comments wherever whitespace is allowed (rules files).
    public var allowComments: Bool
    /// Accept raw line breaks and tabs (LF, CR, HT) inside string literals, kept as they are: a rule expression
    /// written over several lines, as the Firebase console and rules endpoint accept it. Other control
    /// characters stay refused.
    public var allowLineBreaksInStrings: Bool

    /// Strict RFC 8259 with a depth limit of 512 and a size limit of 256 MiB by default.
    public init(
        maxDepth: Int = 512, maxBytes: Int = 256 << 20, allowComments: Bool = false,
        allowLineBreaksInStrings: Bool = false
    ) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
        self.allowComments = allowComments
        self.allowLineBreaksInStrings = allowLineBreaksInStrings
    }

    /// The dialect of security rules files: comments, and strings over several lines.
    public static let rules = JSONParseOptions(allowComments: true, allowLineBreaksInStrings: true)
}
