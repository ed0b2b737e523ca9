// CompiledRules -- a loaded, checked rules document: build once, then answer access questions.
import CanopyCore

/// A rules document compiled for evaluation. Immutable and `Sendable`: swap the whole object to
/// change rules.
///
/// ```swift
/// let rules = try CompiledRules.compile(source: text)
/// let decision = rules.canRead(path: ["users", "901"], root: tree, auth: auth, now: nowMs, query: nil)
/// ```
public final class CompiledRules: Sendable {
    /// The document as loaded (for `GET /.settings/rules.json`).
    public let sourceJSON: JSONValue
    let root: RuleNode

    /// The largest rules source accepted, in bytes.
    public static let maxSourceBytes = 256 * 1024

    private init(sourceJSON: JSONValue, root: RuleNode) {
        self.sourceJSON = sourceJSON
        self.root = root
    }

    /// Compiles a rules document (`{"rules": {...}}`; `//` and `/* */` comments allowed).
    /// - Throws: `RulesError` for the first problem found (its document path and expression column).
    /// The error carries its `sourceLocation` in `source`.
    public static func compile(source: String) throws(RulesError) -> CompiledRules {
        let json = try parseDocument(source)
        do {
            return try compile(json: json)
        } catch {
            var located = error
            located.sourceLocation = RulesSourceMap(source: source).location(of: error)
            throw located
        }
    }

    /// Compiles an already parsed rules document.
    /// - Throws: `RulesError` for the first problem found.
    public static func compile(json: JSONValue) throws(RulesError) -> CompiledRules {
        var loader = RulesLoader()
        guard let root = loader.load(json) else {
            throw loader.errors.first ?? RulesError(path: "/", reason: "invalid rules")
        }
        return CompiledRules(sourceJSON: json, root: root)
    }

    /// Every problem in a rules document; empty if it compiles.
    public static func lint(source: String) -> [RulesDiagnostic] {
        let json: JSONValue
        do {
            json = try parseDocument(source)
        } catch {
            return [RulesDiagnostic(error)]
        }
        var loader = RulesLoader()
        _ = loader.load(json)
        return loader.errors.map(RulesDiagnostic.init)
    }

    static func parseDocument(_ source: String) throws(RulesError) -> JSONValue {
        guard source.utf8.count <= maxSourceBytes else {
            throw RulesError(path: "/", reason: "rules are larger than \(maxSourceBytes / 1024) KB")
        }
        do {
            return try JSONValue.parse(Array(source.utf8), options: .rules)
        } catch {
            var refused = RulesError(path: "/", reason: error.userMessage)
            refused.sourceLocation = SourceLocation(line: error.line, column: error.column)
            throw refused
        }
    }

    /// The keys declared by `.indexOn` on the rule node governing `path` (empty if none).
    public func indexOn(at path: [String]) -> [String] {
        var node = root
        for key in path {
            guard let next = node.child(for: key) else { return [] }
            node = next.node
        }
        return node.indexOn
    }

    /// Decides a read of `path` (Rules.md#Reads-and-writes, "Read at P").
    ///
    /// `.read` rules are evaluated from the root down to `path`; the first that is true grants.
    /// Rules below `path` are never consulted (rules are not filters).
    /// - Parameters:
    ///   - root: the database before the operation.
    ///   - auth: the `auth` variable exactly as rules see it (`.null` when signed out).
    ///   - now: server time in milliseconds.
    ///   - query: the query being read; nil for a plain read (`query.orderByKey == true`).
    public func canRead(path: [String], root data: some RuleDataTree, auth: JSONValue, now: Int64, query: RuleQuery?)
        -> RuleDecision
    {
        var node: RuleNode? = root
        var captures: [String] = []
        var firstError: String?
        let operation = Operation(auth: auth, oldRoot: data, newRoot: nil, now: now, query: query ?? .plain)
        for depth in 0...path.count {
            guard let current = node else { break }
            if let rule = current.read {
                let result: Result<Bool, EvaluationError>
                switch rule {
                case .constant(let b): result = .success(b)
                case .expression(let e):
                    let evaluator = Evaluator(operation: operation, path: Array(path[0..<depth]), captures: captures)
                    result = evaluator.isGranted(e)
                }
                switch result {
                case .success(true): return RuleDecision(allowed: true, reason: "granted by .read at \(current.rulePath)")
                case .success(false): break
                case .failure(let error):
                    if firstError == nil { firstError = ".read at \(current.rulePath) failed: \(error.message)" }
                }
            }
            guard depth < path.count else { break }
            let step = current.child(for: path[depth])
            if step?.isWildcard == true { captures.append(path[depth]) }
            node = step?.node
        }
        return RuleDecision(allowed: false, reason: denial(".read", path, firstError))
    }

    func denial(_ kind: String, _ path: [String], _ error: String?) -> String {
        let base = "no \(kind) rule granted access to /\(path.joined(separator: "/"))"
        return error.map { "\(base) (\($0))" } ?? base
    }

    static func evaluate(_ rule: CompiledRule, _ evaluator: Evaluator) -> Result<Bool, EvaluationError> {
        switch rule {
        case .constant(let b): .success(b)
        case .expression(let e): evaluator.isGranted(e)
        }
    }
}
