// RulesSourceMap -- where a place of a rules document (`/rules/users/$uid/.read`) is in its source text.
//
// `RulesError.path` names the place, `RulesError.location` the position inside a rule's expression; an editor needs
// the line and column in the text the user typed. The map walks the source once, as the rules dialect of JSON is
// written (`//` and `/* */` comments, strings that continue over lines), recording where each member's key and
// value start. It is only used for a document that parsed, to place a loader error; it never fails (an unknown
// place is the start of the text).

/// Positions of the members of a rules document's source text.
struct RulesSourceMap {
    /// The 1-based line and column (in Unicode scalars) of each member's key and value, by document path.
    private(set) var keys: [String: SourceLocation] = [:]
    private(set) var values: [String: SourceLocation] = [:]

    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var line = 1
    private var column = 1

    init(source: String) {
        scalars = Array(source.unicodeScalars)
        values["/"] = SourceLocation(line: 1, column: 1)
        skipSpace()
        values["/"] = here
        value(path: "", depth: 0)
    }

    /// Deeper than this the map records nothing more (the loader's own depth limit is far below it).
    static let maximumDepth = 512

    /// Where the error is in the text: inside the rule string for expression errors, else at the member's key.
    func location(of error: RulesError) -> SourceLocation {
        let path = error.path
        if let inner = error.location, let start = values[path] {
            // The string's opening quote is at `start`; the expression begins one column later.
            if inner.line == 1 { return SourceLocation(line: start.line, column: start.column + inner.column) }
            return SourceLocation(line: start.line + inner.line - 1, column: inner.column)
        }
        return keys[path] ?? values[path] ?? SourceLocation(line: 1, column: 1)
    }

    private var here: SourceLocation { SourceLocation(line: line, column: column) }

    private mutating func advance() {
        guard index < scalars.count else { return }
        if scalars[index] == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
        index += 1
    }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }

    private mutating func skipSpace() {
        while let c = peek() {
            if c == " " || c == "\t" || c == "\n" || c == "\r" || c == "\u{FEFF}" {
                advance()
            } else if c == "/", peek(1) == "/" {
                while let d = peek(), d != "\n" { advance() }
            } else if c == "/", peek(1) == "*" {
                advance()
                advance()
                while let d = peek(), !(d == "*" && peek(1) == "/") { advance() }
                advance()
                advance()
            } else {
                return
            }
        }
    }

    /// Reads a string starting at its quote; returns its text (escapes decoded simply).
    private mutating func string() -> String {
        var out = String.UnicodeScalarView()
        advance()  // opening quote
        while let c = peek(), c != "\"" {
            if c == "\\" {
                advance()
                if let e = peek() { out.append(e == "n" ? "\n" : e == "t" ? "\t" : e) }
                advance()
                continue
            }
            out.append(c)
            advance()
        }
        advance()  // closing quote
        return String(out)
    }

    /// Reads one value at `path`. Whatever the text holds, each call either consumes at least one scalar or
    /// returns at a closer its caller consumes, so the walk ends (a text the map misreads costs a wrong position,
    /// never a loop: the fuzzer found one where `[ … }` spun forever).
    private mutating func value(path: String, depth: Int) {
        skipSpace()
        guard let c = peek() else { return }
        guard depth < Self.maximumDepth else {
            advance()
            return
        }
        switch c {
        case "{":
            advance()
            while true {
                skipSpace()
                guard let d = peek() else { return }
                if d == "}" {
                    advance()
                    return
                }
                if d == "," {
                    advance()
                    continue
                }
                if d == "]" {
                    advance()
                    continue
                }
                let keyAt = here
                let key = d == "\"" ? string() : ""
                if d != "\"" { advance() }
                let member = path + "/" + key
                keys[member] = keyAt
                skipSpace()
                if peek() == ":" { advance() }
                skipSpace()
                values[member] = here
                value(path: member, depth: depth + 1)
            }
        case "[":
            advance()
            var position = 0
            while true {
                skipSpace()
                guard let d = peek() else { return }
                if d == "]" {
                    advance()
                    return
                }
                if d == "," || d == "}" || d == ":" {
                    advance()
                    continue
                }
                let member = path + "/\(position)"
                values[member] = here
                keys[member] = here
                let before = index
                value(path: member, depth: depth + 1)
                if index == before { advance() }
                position += 1
            }
        case "\"":
            _ = string()
        default:
            // A literal (number, true, false, null) ends where a comment starts, as the loader reads it.
            while let d = peek(), !(d == "," || d == "}" || d == "]" || d == " " || d == "\n" || d == "\t" || d == "\r"),
                !(d == "/" && (peek(1) == "/" || peek(1) == "*"))
            {
                advance()
            }
        }
    }
}
