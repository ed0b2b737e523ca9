// Parser -- precedence-climbing parser from tokens to an untyped syntax tree.
//
// Grammar (Rules.md#Grammar), loosest first:
//   conditional := or ('?' conditional ':' conditional)?          right-associative
//   or          := and ('||' and)*
//   and         := equality ('&&' equality)*
//   equality    := relational (('=='|'!='|'==='|'!==') relational)*
//   relational  := additive (('<'|'<='|'>'|'>=') additive)*
//   additive    := multiplicative (('+'|'-') multiplicative)*
//   multiplicative := unary (('*'|'/'|'%') unary)*
//   unary       := ('!'|'-') unary | postfix
//   postfix     := primary ('.' identifier | '[' conditional ']' | '(' arguments ')')*
//   primary     := literal | identifier | regex | '[' elements ']' | '(' conditional ')'
// Nesting is limited to `maxDepth`, and operators to `maxOperators` per expression (a chain like
// `a && b && c ...` nests one level per operator), so hostile input cannot exhaust the stack of the
// recursive checker and evaluator.

/// Operators with two operands that evaluate both sides.
enum BinaryOperator: String, Sendable {
    case add = "+", subtract = "-", multiply = "*", divide = "/", remainder = "%"
    case less = "<", lessEqual = "<=", greater = ">", greaterEqual = ">="
    case equal = "==", notEqual = "!="
}

/// An untyped expression, as written.
indirect enum SyntaxKind: Sendable {
    case boolean(Bool)
    case number(Double)
    case string(String)
    case null
    case regex(pattern: String, flags: String)
    case array([Syntax])
    case identifier(String)
    case member(Syntax, name: String)
    case index(Syntax, Syntax)
    case call(Syntax, [Syntax])
    case not(Syntax)
    case negate(Syntax)
    case binary(BinaryOperator, Syntax, Syntax)
    case and(Syntax, Syntax)
    case or(Syntax, Syntax)
    case conditional(Syntax, Syntax, Syntax)
}

/// An expression node with the position of its first token (or of its operator, for binary forms).
struct Syntax: Sendable {
    var kind: SyntaxKind
    var location: SourceLocation
}

struct Parser {
    private let tokens: [Token]
    private var position = 0
    private var depth = 0
    private var operators = 0
    static let maxDepth = 100
    static let maxOperators = 1000

    /// Parses one complete expression.
    static func parse(_ source: String) throws(ExpressionError) -> Syntax {
        var parser = Parser(tokens: try Lexer.tokenize(source))
        let expression = try parser.conditional()
        guard case .end = parser.current.kind else { throw parser.unexpected("end of expression") }
        return expression
    }

    private init(tokens: [Token]) { self.tokens = tokens }

    private var current: Token { tokens[position] }

    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    private func isPunctuator(_ p: Punctuator) -> Bool {
        if case .punctuator(let q) = current.kind { return q == p }
        return false
    }

    private mutating func expect(_ p: Punctuator) throws(ExpressionError) {
        guard isPunctuator(p) else { throw unexpected("'\(p.rawValue)'") }
        advance()
    }

    private func unexpected(_ expected: String) -> ExpressionError {
        ExpressionError(location: current.location, reason: "expected \(expected), found \(current.describedForError)")
    }

    private mutating func enter() throws(ExpressionError) {
        depth += 1
        if depth > Parser.maxDepth {
            throw ExpressionError(location: current.location, reason: "expression is nested too deeply")
        }
    }

    /// Counts one binary, logical or conditional operator.
    private mutating func countOperator() throws(ExpressionError) {
        operators += 1
        if operators > Parser.maxOperators {
            throw ExpressionError(location: current.location, reason: "expression has too many operators")
        }
    }

    private mutating func conditional() throws(ExpressionError) -> Syntax {
        try enter()
        defer { depth -= 1 }
        let condition = try or()
        guard isPunctuator(.question) else { return condition }
        let at = current.location
        try countOperator()
        advance()
        let whenTrue = try conditional()
        try expect(.colon)
        let whenFalse = try conditional()
        return Syntax(kind: .conditional(condition, whenTrue, whenFalse), location: at)
    }

    private mutating func or() throws(ExpressionError) -> Syntax {
        var left = try and()
        while isPunctuator(.or) {
            let at = current.location
            try countOperator()
            advance()
            left = Syntax(kind: .or(left, try and()), location: at)
        }
        return left
    }

    private mutating func and() throws(ExpressionError) -> Syntax {
        var left = try binary(level: 0)
        while isPunctuator(.and) {
            let at = current.location
            try countOperator()
            advance()
            left = Syntax(kind: .and(left, try binary(level: 0)), location: at)
        }
        return left
    }

    /// Binary levels from loosest to tightest: equality, relational, additive, multiplicative.
    private static let levels: [[Punctuator: BinaryOperator]] = [
        [.equal: .equal, .strictEqual: .equal, .notEqual: .notEqual, .strictNotEqual: .notEqual],
        [.less: .less, .lessEqual: .lessEqual, .greater: .greater, .greaterEqual: .greaterEqual],
        [.plus: .add, .minus: .subtract],
        [.star: .multiply, .slash: .divide, .percent: .remainder],
    ]

    private mutating func binary(level: Int) throws(ExpressionError) -> Syntax {
        if level == Parser.levels.count { return try unary() }
        var left = try binary(level: level + 1)
        while case .punctuator(let p) = current.kind, let op = Parser.levels[level][p] {
            let at = current.location
            try countOperator()
            advance()
            let right = try binary(level: level + 1)
            left = Syntax(kind: .binary(op, left, right), location: at)
        }
        return left
    }

    private mutating func unary() throws(ExpressionError) -> Syntax {
        let at = current.location
        if isPunctuator(.not) {
            try enter()
            defer { depth -= 1 }
            advance()
            return Syntax(kind: .not(try unary()), location: at)
        }
        if isPunctuator(.minus) {
            try enter()
            defer { depth -= 1 }
            advance()
            return Syntax(kind: .negate(try unary()), location: at)
        }
        return try postfix()
    }

    private mutating func postfix() throws(ExpressionError) -> Syntax {
        var target = try primary()
        var links = 0
        while true {
            let at = current.location
            if isPunctuator(.dot) {
                advance()
                guard case .identifier(let name) = current.kind else { throw unexpected("a property name") }
                advance()
                target = Syntax(kind: .member(target, name: name), location: at)
            } else if isPunctuator(.leftBracket) {
                advance()
                let index = try conditional()
                try expect(.rightBracket)
                target = Syntax(kind: .index(target, index), location: at)
            } else if isPunctuator(.leftParen) {
                advance()
                var arguments: [Syntax] = []
                if !isPunctuator(.rightParen) {
                    arguments.append(try conditional())
                    while isPunctuator(.comma) {
                        advance()
                        arguments.append(try conditional())
                    }
                }
                try expect(.rightParen)
                target = Syntax(kind: .call(target, arguments), location: at)
            } else {
                return target
            }
            links += 1
            if links > 4 * Parser.maxDepth {
                throw ExpressionError(location: at, reason: "expression is nested too deeply")
            }
        }
    }

    private mutating func primary() throws(ExpressionError) -> Syntax {
        let token = current
        switch token.kind {
        case .number(let v):
            advance()
            return Syntax(kind: .number(v), location: token.location)
        case .string(let s):
            advance()
            return Syntax(kind: .string(s), location: token.location)
        case .regex(let pattern, let flags):
            advance()
            return Syntax(kind: .regex(pattern: pattern, flags: flags), location: token.location)
        case .identifier(let name):
            advance()
            switch name {
            case "true": return Syntax(kind: .boolean(true), location: token.location)
            case "false": return Syntax(kind: .boolean(false), location: token.location)
            case "null": return Syntax(kind: .null, location: token.location)
            default: return Syntax(kind: .identifier(name), location: token.location)
            }
        case .punctuator(.leftParen):
            try enter()
            defer { depth -= 1 }
            advance()
            let inner = try conditional()
            try expect(.rightParen)
            return inner
        case .punctuator(.leftBracket):
            try enter()
            defer { depth -= 1 }
            advance()
            var elements: [Syntax] = []
            if !isPunctuator(.rightBracket) {
                elements.append(try conditional())
                while isPunctuator(.comma) {
                    advance()
                    elements.append(try conditional())
                }
            }
            try expect(.rightBracket)
            return Syntax(kind: .array(elements), location: token.location)
        default:
            throw unexpected("an expression")
        }
    }
}
