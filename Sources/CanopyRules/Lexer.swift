// Lexer -- splits one rule expression into tokens (JavaScript lexical syntax, restricted).
//
// Accepted tokens: identifiers (`[A-Za-z_$][A-Za-z0-9_$]*`), decimal numbers (`12`, `1.5`, `.5`,
// `1e3`), strings in single or double quotes with JavaScript escapes, regex literals `/.../flags`
// (only where an operand may start, as in JavaScript), and the punctuators of the rules grammar.
// Everything else -- `=`, `;`, `{`, `&`, `|`, `++`, `--`, `**`, backticks, ... -- is refused with
// its line:column, so statements and assignments never reach the parser.

/// Punctuators of the rules grammar.
enum Punctuator: String, Sendable {
    case dot = ".", comma = ",", leftParen = "(", rightParen = ")", leftBracket = "[", rightBracket = "]"
    case not = "!", minus = "-", plus = "+", star = "*", slash = "/", percent = "%"
    case less = "<", lessEqual = "<=", greater = ">", greaterEqual = ">="
    case equal = "==", notEqual = "!=", strictEqual = "===", strictNotEqual = "!=="
    case and = "&&", or = "||", question = "?", colon = ":"
}

/// One token.
enum TokenKind: Sendable, Equatable {
    case identifier(String)
    case number(Double)
    case string(String)
    case regex(pattern: String, flags: String)
    case punctuator(Punctuator)
    case end
}

struct Token: Sendable {
    var kind: TokenKind
    var location: SourceLocation

    var describedForError: String {
        switch kind {
        case .identifier(let name): "'\(name)'"
        case .number: "a number"
        case .string: "a string"
        case .regex: "a regular expression"
        case .punctuator(let p): "'\(p.rawValue)'"
        case .end: "end of expression"
        }
    }
}

/// The lexer. `tokenize` is the entry point; it never traps on any input.
struct Lexer {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var line = 1
    private var column = 1
    private var tokens: [Token] = []

    static let maxExpressionLength = 64 * 1024

    static func tokenize(_ source: String) throws(ExpressionError) -> [Token] {
        var lexer = Lexer(scalars: Array(source.unicodeScalars))
        guard lexer.scalars.count <= maxExpressionLength else {
            throw ExpressionError(location: SourceLocation(line: 1, column: 1), reason: "expression is too long")
        }
        try lexer.run()
        return lexer.tokens
    }

    private init(scalars: [Unicode.Scalar]) { self.scalars = scalars }

    private var here: SourceLocation { SourceLocation(line: line, column: column) }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        let i = index + offset
        return i < scalars.count ? scalars[i] : nil
    }

    private mutating func advance() {
        if scalars[index] == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
        index += 1
    }

    /// A `/` starts a regex literal only where an operand may start (JavaScript's rule).
    private var regexAllowed: Bool {
        guard let last = tokens.last else { return true }
        switch last.kind {
        case .identifier, .number, .string, .regex: return false
        case .punctuator(let p): return p != .rightParen && p != .rightBracket
        case .end: return false
        }
    }

    private mutating func run() throws(ExpressionError) {
        while let c = peek() {
            if c == " " || c == "\t" || c == "\n" || c == "\r" || c == "\u{0B}" || c == "\u{0C}" || c == "\u{A0}" {
                advance()
                continue
            }
            let start = here
            if Lexer.isIdentifierStart(c) {
                var name = String.UnicodeScalarView()
                while let d = peek(), Lexer.isIdentifierStart(d) || ("0"..."9").contains(d) {
                    name.append(d)
                    advance()
                }
                tokens.append(Token(kind: .identifier(String(name)), location: start))
            } else if ("0"..."9").contains(c) || (c == "." && peek(1).map { ("0"..."9").contains($0) } == true) {
                tokens.append(Token(kind: .number(try number()), location: start))
            } else if c == "'" || c == "\"" {
                tokens.append(Token(kind: .string(try string(quote: c)), location: start))
            } else if c == "/" && regexAllowed {
                let (pattern, flags) = try regex()
                tokens.append(Token(kind: .regex(pattern: pattern, flags: flags), location: start))
            } else {
                tokens.append(Token(kind: .punctuator(try punctuator()), location: start))
            }
        }
        tokens.append(Token(kind: .end, location: here))
    }

    static func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(c) || ("A"..."Z").contains(c) || c == "_" || c == "$"
    }

    private mutating func number() throws(ExpressionError) -> Double {
        let start = here
        var text = ""
        func digits(_ lexer: inout Lexer, _ text: inout String) {
            while let d = lexer.peek(), ("0"..."9").contains(d) {
                text.unicodeScalars.append(d)
                lexer.advance()
            }
        }
        digits(&self, &text)
        if peek() == "." {
            text += "."
            advance()
            digits(&self, &text)
        }
        if let e = peek(), e == "e" || e == "E" {
            text += "e"
            advance()
            if let s = peek(), s == "+" || s == "-" {
                text.unicodeScalars.append(s)
                advance()
            }
            guard let d = peek(), ("0"..."9").contains(d) else {
                throw ExpressionError(location: start, reason: "malformed number")
            }
            digits(&self, &text)
        }
        if let next = peek(), Lexer.isIdentifierStart(next) || ("0"..."9").contains(next) {
            throw ExpressionError(location: here, reason: "unexpected character after number")
        }
        if text.hasPrefix(".") { text = "0" + text }
        if text.hasSuffix(".") { text += "0" }
        guard let value = Double(text), value.isFinite else {
            throw ExpressionError(location: start, reason: "malformed number")
        }
        return value
    }

    private mutating func string(quote: Unicode.Scalar) throws(ExpressionError) -> String {
        let start = here
        advance()
        var out = String.UnicodeScalarView()
        while true {
            guard let c = peek(), c != "\n", c != "\r" else {
                throw ExpressionError(location: start, reason: "unterminated string")
            }
            advance()
            if c == quote { return String(out) }
            if c != "\\" {
                out.append(c)
                continue
            }
            let escapeAt = here
            guard let e = peek() else { throw ExpressionError(location: start, reason: "unterminated string") }
            advance()
            switch e {
            case "n": out.append("\n")
            case "t": out.append("\t")
            case "r": out.append("\r")
            case "b": out.append("\u{08}")
            case "f": out.append("\u{0C}")
            case "v": out.append("\u{0B}")
            case "0" where !(peek().map { ("0"..."9").contains($0) } ?? false): out.append("\u{00}")
            case "x": out.append(try hexScalar(count: 2, at: escapeAt))
            case "u":
                if peek() == "{" {
                    advance()
                    var value: UInt32 = 0
                    var count = 0
                    while let h = peek(), h != "}" {
                        guard let v = Lexer.hexValue(h), count < 6 else {
                            throw ExpressionError(location: escapeAt, reason: "invalid unicode escape")
                        }
                        value = value * 16 + v
                        count += 1
                        advance()
                    }
                    guard peek() == "}", count > 0, let s = Unicode.Scalar(value) else {
                        throw ExpressionError(location: escapeAt, reason: "invalid unicode escape")
                    }
                    advance()
                    out.append(s)
                } else {
                    let high = try hexValue(count: 4, at: escapeAt)
                    if (0xD800...0xDBFF).contains(high), peek() == "\\", peek(1) == "u" {
                        advance()
                        advance()
                        let low = try hexValue(count: 4, at: escapeAt)
                        guard (0xDC00...0xDFFF).contains(low),
                            let s = Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
                        else { throw ExpressionError(location: escapeAt, reason: "invalid unicode escape") }
                        out.append(s)
                    } else {
                        guard let s = Unicode.Scalar(high) else {
                            throw ExpressionError(location: escapeAt, reason: "invalid unicode escape")
                        }
                        out.append(s)
                    }
                }
            case "\n", "\r": throw ExpressionError(location: escapeAt, reason: "line continuation in string")
            case _ where ("1"..."9").contains(e) || e == "0":
                throw ExpressionError(location: escapeAt, reason: "octal escape in string")
            default: out.append(e)
            }
        }
    }

    private static func hexValue(_ c: Unicode.Scalar) -> UInt32? {
        switch c {
        case "0"..."9": c.value - 48
        case "a"..."f": c.value - 87
        case "A"..."F": c.value - 55
        default: nil
        }
    }

    private mutating func hexValue(count: Int, at location: SourceLocation) throws(ExpressionError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard let c = peek(), let v = Lexer.hexValue(c) else {
                throw ExpressionError(location: location, reason: "invalid escape")
            }
            value = value * 16 + v
            advance()
        }
        return value
    }

    private mutating func hexScalar(count: Int, at location: SourceLocation) throws(ExpressionError) -> Unicode.Scalar {
        guard let s = Unicode.Scalar(try hexValue(count: count, at: location)) else {
            throw ExpressionError(location: location, reason: "invalid escape")
        }
        return s
    }

    private mutating func regex() throws(ExpressionError) -> (String, String) {
        let start = here
        advance()
        var pattern = String.UnicodeScalarView()
        var inClass = false
        while true {
            guard let c = peek(), c != "\n", c != "\r" else {
                throw ExpressionError(location: start, reason: "unterminated regular expression")
            }
            advance()
            if c == "/" && !inClass { break }
            pattern.append(c)
            if c == "\\" {
                guard let e = peek(), e != "\n", e != "\r" else {
                    throw ExpressionError(location: start, reason: "unterminated regular expression")
                }
                pattern.append(e)
                advance()
            } else if c == "[" {
                inClass = true
            } else if c == "]" {
                inClass = false
            }
        }
        var flags = String.UnicodeScalarView()
        while let f = peek(), Lexer.isIdentifierStart(f) || ("0"..."9").contains(f) {
            flags.append(f)
            advance()
        }
        return (String(pattern), String(flags))
    }

    private mutating func punctuator() throws(ExpressionError) -> Punctuator {
        let start = here
        let c = scalars[index]
        let n1 = peek(1)
        let n2 = peek(2)
        func take(_ count: Int, _ p: Punctuator) -> Punctuator {
            for _ in 0..<count { advance() }
            return p
        }
        switch c {
        case ".": return take(1, .dot)
        case ",": return take(1, .comma)
        case "(": return take(1, .leftParen)
        case ")": return take(1, .rightParen)
        case "[": return take(1, .leftBracket)
        case "]": return take(1, .rightBracket)
        case "?": return take(1, .question)
        case ":": return take(1, .colon)
        case "%": return take(1, .percent)
        case "/": return take(1, .slash)
        case "*":
            if n1 == "*" || n1 == "=" { break }
            return take(1, .star)
        case "+":
            if n1 == "+" || n1 == "=" { break }
            return take(1, .plus)
        case "-":
            if n1 == "-" || n1 == "=" { break }
            return take(1, .minus)
        case "!":
            if n1 == "=" { return n2 == "=" ? take(3, .strictNotEqual) : take(2, .notEqual) }
            return take(1, .not)
        case "=":
            if n1 == "=" { return n2 == "=" ? take(3, .strictEqual) : take(2, .equal) }
        case "<":
            if n1 == "<" { break }
            return n1 == "=" ? take(2, .lessEqual) : take(1, .less)
        case ">":
            if n1 == ">" { break }
            return n1 == "=" ? take(2, .greaterEqual) : take(1, .greater)
        case "&":
            if n1 == "&" { return take(2, .and) }
        case "|":
            if n1 == "|" { return take(2, .or) }
        default: break
        }
        let shown = c.value < 0x20 || c.value == 0x7F ? "a control character" : "'\(Character(c))'"
        throw ExpressionError(location: start, reason: "unexpected \(shown)")
    }
}
