// RulesError -- why a rules document was refused: where in the document, where in the expression, what.
import CanopyCore

/// A 1-based line and column inside one rule expression (columns count Unicode scalars).
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }
    public var description: String { "\(line):\(column)" }
}

/// A rules document that cannot be loaded.
///
/// `path` names the place in the rules document (`/rules/users/$uid/.read`); `location` is the
/// position inside that rule's expression when the problem is in an expression. The message names
/// tokens and types but never data values.
public struct RulesError: CanopyError, Hashable {
    /// Where in the rules document, as a slash path starting at the document root (`/rules/...`).
    public var path: String
    /// Where inside the rule's expression, when the problem is in an expression.
    public var location: SourceLocation?
    /// What is wrong, one short clause.
    public var reason: String
    /// Where in the source text (1-based line and column), when the error comes from compiling a text:
    /// `CompiledRules.compile(source:)` fills it in (see RulesSourceMap).
    public var sourceLocation: SourceLocation?

    public init(path: String, location: SourceLocation? = nil, reason: String) {
        self.path = path
        self.location = location
        self.reason = reason
    }

    public var code: String { "invalid_rules" }
    public var userMessage: String {
        if let location { return "\(path):\(location): \(reason)" }
        return "\(path): \(reason)"
    }
}

/// One problem found by `CompiledRules.lint(source:)`.
public struct RulesDiagnostic: Sendable, Hashable, CustomStringConvertible {
    /// The problem, with its document path and expression location.
    public var error: RulesError
    public init(_ error: RulesError) { self.error = error }
    public var description: String { error.userMessage }
}

/// An error found while parsing or checking one expression, before the document path is attached.
struct ExpressionError: Error, Sendable {
    var location: SourceLocation
    var reason: String

    func attached(to path: String) -> RulesError {
        RulesError(path: path, location: location, reason: reason)
    }
}
