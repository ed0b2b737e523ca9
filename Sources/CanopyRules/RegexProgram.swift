// RegexProgram -- the Firebase rules regex dialect, parsed and compiled to a Thompson NFA program.
//
// Dialect (Rules.md#Regular-expressions):
//   pattern     := '^'? alternation '$'?      '^' only as the first character, '$' only as the last
//   alternation := sequence ('|' sequence)*   no empty alternatives: /a|/ and /^(foo|)$/ are refused
//   sequence    := (atom quantifier?)+
//   atom        := '(' alternation ')' | '[' '^'? item+ ']' | '.' | escape | literal
//   quantifier  := ('*' | '+' | '?' | '{n}' | '{n,}' | '{n,m}') '?'?     a trailing '?' (lazy) is accepted;
//                                                                        it cannot change a yes/no answer
//   escape      := '\d' '\w' '\s' '\D' '\W' '\S' | '\n' '\t' '\r' '\f' '\v' | '\' punctuation
// Flags: only `i`. Counted repetition is limited to 1000 and the program to `maxInstructions`, so
// a compiled program's size is bounded; matching is a linear-time NFA simulation (RegexProgram+Match).

/// A character class: ranges of scalars plus the shorthand classes, possibly negated.
struct CharacterClass: Sendable {
    var ranges: [ClosedRange<UInt32>] = []
    var negated = false

    static let digit = CharacterClass(ranges: [48...57])
    static let word = CharacterClass(ranges: [48...57, 65...90, 95...95, 97...122])
    /// JavaScript's `\s`: white space and line terminators.
    static let space = CharacterClass(ranges: [
        9...13, 32...32, 0xA0...0xA0, 0x1680...0x1680, 0x2000...0x200A, 0x2028...0x2029, 0x202F...0x202F,
        0x205F...0x205F, 0x3000...0x3000, 0xFEFF...0xFEFF,
    ])

    /// True if `v` lies in one of the ranges (ignoring `negated`).
    func inRanges(_ v: UInt32) -> Bool {
        for r in ranges where r.contains(v) { return true }
        return false
    }

    /// Membership of `v`, honouring `negated`.
    func containsRaw(_ v: UInt32) -> Bool { inRanges(v) != negated }
}

/// One NFA instruction.
enum RegexInstruction: Sendable {
    case scalar(UInt32)
    case anyExceptNewline
    case characterClass(Int)
    case split(Int, Int)
    case jump(Int)
    case match
}

/// A problem in a regex literal.
struct RegexError: Error, Sendable {
    var reason: String
}

/// A compiled regex literal, ready to search strings.
struct RegexProgram: Sendable {
    var instructions: [RegexInstruction]
    var classes: [CharacterClass]
    var anchoredStart: Bool
    var anchoredEnd: Bool
    var ignoreCase: Bool

    static let maxInstructions = 20_000
    static let maxRepeat = 1000

    /// Parses and compiles `/pattern/flags`. A pure function of its input; never traps.
    static func compile(pattern: String, flags: String) throws(RegexError) -> RegexProgram {
        var ignoreCase = false
        for f in flags {
            guard f == "i", !ignoreCase else { throw RegexError(reason: "unsupported flag '\(f)'") }
            ignoreCase = true
        }
        var scalars = Array(pattern.unicodeScalars)
        var anchoredStart = false
        var anchoredEnd = false
        if scalars.first == "^" {
            anchoredStart = true
            scalars.removeFirst()
        }
        if scalars.last == "$" && !RegexProgram.endsWithEscape(scalars) {
            anchoredEnd = true
            scalars.removeLast()
        }
        if scalars.isEmpty && (anchoredStart || anchoredEnd) {  // /^$/, /^/ and /$/ match by anchors alone
            return RegexProgram(
                instructions: [.match], classes: [], anchoredStart: anchoredStart, anchoredEnd: anchoredEnd,
                ignoreCase: ignoreCase)
        }
        var parser = RegexParser(scalars: scalars, ignoreCase: ignoreCase)
        let tree = try parser.parse()
        var emitter = RegexEmitter(ignoreCase: ignoreCase)
        emitter.classes = parser.classes
        try emitter.emit(tree)
        try emitter.append(.match)
        return RegexProgram(
            instructions: emitter.instructions, classes: emitter.classes, anchoredStart: anchoredStart,
            anchoredEnd: anchoredEnd, ignoreCase: ignoreCase)
    }

    /// True when the final `$` is escaped (an odd number of backslashes precede it).
    private static func endsWithEscape(_ s: [Unicode.Scalar]) -> Bool {
        var count = 0
        var i = s.count - 2
        while i >= 0 && s[i] == "\\" {
            count += 1
            i -= 1
        }
        return count % 2 == 1
    }

    /// Simple case folding used by the `i` flag.
    static func fold(_ v: UInt32) -> UInt32 {
        if v < 128 { return (65...90).contains(v) ? v + 32 : v }
        guard let s = Unicode.Scalar(v) else { return v }
        let lower = s.properties.lowercaseMapping.unicodeScalars
        if lower.count == 1, let first = lower.first { return first.value }
        return v
    }
}

/// The regex syntax tree.
indirect enum RegexNode: Sendable {
    case scalar(UInt32)
    case any
    case characterClass(Int)
    case sequence([RegexNode])
    case alternation([RegexNode])
    case repeated(RegexNode, min: Int, max: Int?)
}

struct RegexParser {
    let scalars: [Unicode.Scalar]
    let ignoreCase: Bool
    var index = 0
    var depth = 0
    var classes: [CharacterClass] = []

    init(scalars: [Unicode.Scalar], ignoreCase: Bool) {
        self.scalars = scalars
        self.ignoreCase = ignoreCase
    }

    private var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    mutating func parse() throws(RegexError) -> RegexNode {
        let node = try alternation()
        if let c = current {
            throw RegexError(reason: c == ")" ? "unbalanced ')'" : "unexpected '\(Character(c))'")
        }
        return node
    }

    private mutating func alternation() throws(RegexError) -> RegexNode {
        depth += 1
        defer { depth -= 1 }
        guard depth < 100 else { throw RegexError(reason: "groups nested too deeply") }
        var branches = [try sequence()]
        while current == "|" {
            index += 1
            branches.append(try sequence())
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func sequence() throws(RegexError) -> RegexNode {
        var items: [RegexNode] = []
        while let c = current, c != "|", c != ")" {
            let atom = try self.atom()
            items.append(try quantified(atom))
        }
        guard !items.isEmpty else { throw RegexError(reason: "empty alternative") }
        return items.count == 1 ? items[0] : .sequence(items)
    }

    private mutating func quantified(_ atom: RegexNode) throws(RegexError) -> RegexNode {
        var node = atom
        guard let c = current else { return node }
        switch c {
        case "*": node = .repeated(atom, min: 0, max: nil)
        case "+": node = .repeated(atom, min: 1, max: nil)
        case "?": node = .repeated(atom, min: 0, max: 1)
        case "{":
            index += 1
            let low = try number()
            var high: Int? = low
            if current == "," {
                index += 1
                high = current == "}" ? nil : try number()
            }
            guard current == "}" else { throw RegexError(reason: "malformed {n,m} quantifier") }
            if let high, high < low { throw RegexError(reason: "quantifier range out of order") }
            node = .repeated(atom, min: low, max: high)
        default: return node
        }
        index += 1
        if current == "?" { index += 1 }  // lazy: same yes/no answer
        if let next = current, next == "*" || next == "+" || next == "?" || next == "{" {
            throw RegexError(reason: "nothing to repeat")
        }
        return node
    }

    private mutating func number() throws(RegexError) -> Int {
        var value = 0
        var digits = 0
        while let c = current, ("0"..."9").contains(c) {
            value = value * 10 + Int(c.value - 48)
            digits += 1
            index += 1
            guard value <= RegexProgram.maxRepeat else { throw RegexError(reason: "repetition count too large") }
        }
        guard digits > 0 else { throw RegexError(reason: "malformed {n,m} quantifier") }
        return value
    }

    private mutating func addClass(_ c: CharacterClass) -> RegexNode {
        classes.append(c)
        return .characterClass(classes.count - 1)
    }

    private mutating func atom() throws(RegexError) -> RegexNode {
        guard let c = current else { throw RegexError(reason: "unexpected end of pattern") }
        index += 1
        switch c {
        case "(":
            guard current != "?" else { throw RegexError(reason: "group modifiers are not supported") }
            let inner = try alternation()
            guard current == ")" else { throw RegexError(reason: "missing ')'") }
            index += 1
            return inner
        case "[": return try characterSet()
        case ".": return .any
        case "\\": return try escape(inSet: false).node(&self)
        case "*", "+", "?", "{": throw RegexError(reason: "nothing to repeat")
        case "^": throw RegexError(reason: "'^' is only allowed at the start of the pattern")
        case "$": throw RegexError(reason: "'$' is only allowed at the end of the pattern")
        case "]", "}": throw RegexError(reason: "unbalanced '\(Character(c))'")
        default: return .scalar(c.value)
        }
    }

    enum Escaped {
        case scalar(UInt32)
        case shorthand(CharacterClass)

        func node(_ parser: inout RegexParser) -> RegexNode {
            switch self {
            case .scalar(let v): .scalar(v)
            case .shorthand(let c): parser.addClass(c)
            }
        }
    }

    private mutating func escape(inSet: Bool) throws(RegexError) -> Escaped {
        guard let e = current else { throw RegexError(reason: "pattern ends with '\\'") }
        index += 1
        func negated(_ c: CharacterClass) -> CharacterClass {
            var c = c
            c.negated = true
            return c
        }
        switch e {
        case "d": return .shorthand(.digit)
        case "w": return .shorthand(.word)
        case "s": return .shorthand(.space)
        case "D": return .shorthand(negated(.digit))
        case "W": return .shorthand(negated(.word))
        case "S": return .shorthand(negated(.space))
        case "n": return .scalar(10)
        case "t": return .scalar(9)
        case "r": return .scalar(13)
        case "f": return .scalar(12)
        case "v": return .scalar(11)
        default:
            if e.properties.isAlphabetic || ("0"..."9").contains(e) {
                throw RegexError(reason: "unsupported escape '\\\(Character(e))'")
            }
            return .scalar(e.value)
        }
    }

    private mutating func characterSet() throws(RegexError) -> RegexNode {
        var set = CharacterClass()
        if current == "^" {
            set.negated = true
            index += 1
        }
        var members: [CharacterClass] = []
        var first = true
        while true {
            guard let c = current else { throw RegexError(reason: "missing ']'") }
            if c == "]" && !first { break }
            if c == "]" { throw RegexError(reason: "empty character set") }
            first = false
            index += 1
            var low: UInt32
            if c == "\\" {
                switch try escape(inSet: true) {
                case .scalar(let v): low = v
                case .shorthand(let s):
                    members.append(s)
                    continue
                }
            } else {
                low = c.value
            }
            if current == "-", index + 1 < scalars.count, scalars[index + 1] != "]" {
                index += 1
                guard let h = current else { throw RegexError(reason: "missing ']'") }
                index += 1
                var high = h.value
                if h == "\\" {
                    guard case .scalar(let v) = try escape(inSet: true) else {
                        throw RegexError(reason: "invalid range in character set")
                    }
                    high = v
                }
                guard low <= high else { throw RegexError(reason: "range out of order in character set") }
                set.ranges.append(low...high)
                low = 0
                continue
            }
            set.ranges.append(low...low)
        }
        index += 1
        // Shorthand members (\d, \W, ...) are expanded into ranges so one class answers membership.
        for member in members {
            if member.negated {
                var start: UInt32 = 0
                for r in member.ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
                    if r.lowerBound > start { set.ranges.append(start...(r.lowerBound - 1)) }
                    start = r.upperBound + 1
                }
                set.ranges.append(start...0x10FFFF)
            } else {
                set.ranges.append(contentsOf: member.ranges)
            }
        }
        return addClass(set)
    }
}

/// Emits NFA instructions for a `RegexNode`, refusing programs above `maxInstructions`.
struct RegexEmitter {
    let ignoreCase: Bool
    var instructions: [RegexInstruction] = []
    var classes: [CharacterClass] = []

    mutating func append(_ i: RegexInstruction) throws(RegexError) {
        guard instructions.count < RegexProgram.maxInstructions else {
            throw RegexError(reason: "pattern is too large")
        }
        instructions.append(i)
    }

    mutating func emit(_ node: RegexNode) throws(RegexError) {
        switch node {
        case .scalar(let v): try append(.scalar(ignoreCase ? RegexProgram.fold(v) : v))
        case .any: try append(.anyExceptNewline)
        case .characterClass(let i): try append(.characterClass(i))
        case .sequence(let items):
            for item in items { try emit(item) }
        case .alternation(let branches):
            var jumps: [Int] = []
            for (n, branch) in branches.enumerated() {
                if n < branches.count - 1 {
                    let split = instructions.count
                    try append(.split(split + 1, 0))
                    try emit(branch)
                    jumps.append(instructions.count)
                    try append(.jump(0))
                    instructions[split] = .split(split + 1, instructions.count)
                } else {
                    try emit(branch)
                }
            }
            for j in jumps { instructions[j] = .jump(instructions.count) }
        case .repeated(let inner, let min, let max):
            for _ in 0..<min { try emit(inner) }
            if let max {
                var splits: [Int] = []
                for _ in min..<max {
                    splits.append(instructions.count)
                    try append(.split(instructions.count + 1, 0))
                    try emit(inner)
                }
                for s in splits { instructions[s] = .split(s + 1, instructions.count) }
            } else {
                let split = instructions.count
                try append(.split(split + 1, 0))
                try emit(inner)
                try append(.jump(split))
                instructions[split] = .split(split + 1, instructions.count)
            }
        }
    }
}
