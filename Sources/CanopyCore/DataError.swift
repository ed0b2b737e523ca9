// DataError -- why a path, key or piece of written data was refused.

/// A path, key or value that cannot be stored.
///
/// The error names the location (an absolute path such as `/rooms/a`) and the rule that was broken. It never
/// contains stored or written values; for an invalid key the location is the key's parent, so the offending
/// key's characters (which may be control characters) are not echoed either.
public struct DataError: CanopyError, Hashable {
    /// The rule that was broken.
    public enum Kind: Sendable, Hashable {
        /// A key is empty, longer than 768 UTF-8 bytes, or contains `. $ # [ ] /` or an ASCII control character.
        case invalidKey
        /// A path string has too many segments or an invalid segment.
        case invalidPath
        /// The data would nest deeper than 32 levels below the root.
        case tooDeep
        /// A string value is larger than 10 MB of UTF-8.
        case stringTooLarge
        /// A number is NaN or infinite.
        case invalidNumber
        /// A `.priority` is neither a string, a finite number nor null.
        case invalidPriority
        /// A `.value` has siblings other than `.priority`, or holds an object or array.
        case invalidValueWrapper
        /// A `{".sv": …}` placeholder reached a place where it must already be resolved.
        case unresolvedServerValue
        /// A `{".sv": …}` placeholder names an unknown operation or is malformed.
        case invalidServerValue
        /// An object has the same key twice.
        case duplicateKey
    }

    /// The rule that was broken.
    public let kind: Kind
    /// The absolute location of the problem (`/` for the root).
    public let path: String

    /// Creates an error for the location `path`.
    public init(_ kind: Kind, at path: Path) {
        self.kind = kind
        self.path = path.description
    }

    /// Creates an error for a location given as text (for paths that could not be parsed).
    public init(_ kind: Kind, atText path: String) {
        self.kind = kind
        self.path = path
    }

    /// `invalid_path` for bad path strings, `invalid_data` for everything else.
    public var code: String {
        switch kind {
        case .invalidPath: "invalid_path"
        default: "invalid_data"
        }
    }

    public var userMessage: String {
        switch kind {
        case .invalidKey:
            "Invalid key under \(path): keys can't be empty, longer than 768 bytes, or contain . $ # [ ] / "
                + "or ASCII control characters."
        case .invalidPath:
            "Invalid path \(path): at most 32 segments, each a valid key."
        case .tooDeep:
            "Invalid data at \(path): data can't be nested more than 32 levels deep."
        case .stringTooLarge:
            "Invalid data at \(path): string values are limited to 10 MB."
        case .invalidNumber:
            "Invalid data at \(path): numbers must be finite (no NaN or Infinity)."
        case .invalidPriority:
            "Invalid priority at \(path): a priority must be a string, a finite number or null."
        case .invalidValueWrapper:
            "Invalid data at \(path): .value must hold a string, number or boolean and may only be combined "
                + "with .priority."
        case .unresolvedServerValue:
            "Invalid data at \(path): server value placeholders are not allowed here."
        case .invalidServerValue:
            "Invalid server value at \(path): expected {\".sv\": \"timestamp\"} or "
                + "{\".sv\": {\"increment\": <number>}}."
        case .duplicateKey:
            "Invalid data under \(path): an object has the same key twice."
        }
    }
}
