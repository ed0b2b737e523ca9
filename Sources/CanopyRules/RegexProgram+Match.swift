// RegexProgram+Match -- searching a string with a compiled program (Thompson NFA simulation).
//
// The set of live threads advances one Unicode scalar at a time, so a search costs at most
// O(input scalars x program size) and never backtracks. Unanchored patterns search: a new thread
// starts at every position. `.` does not match line terminators, as in JavaScript.

extension RegexProgram {
    /// True if the pattern matches anywhere in `text` (or as anchored by `^`/`$`).
    func matches(_ text: String) -> Bool {
        var current = ThreadList(capacity: instructions.count)
        var next = ThreadList(capacity: instructions.count)
        var stack: [Int] = []
        current.generation = 1
        addThread(0, to: &current, stack: &stack)
        if current.hasMatch && !anchoredEnd { return true }
        var generation = 1
        for scalar in text.unicodeScalars {
            generation += 1
            next.reset(generation: generation)
            let v = ignoreCase ? RegexProgram.fold(scalar.value) : scalar.value
            for pc in current.threads {
                if step(instructions[pc], scalar: scalar.value, folded: v) {
                    addThread(pc + 1, to: &next, stack: &stack)
                }
            }
            if !anchoredStart { addThread(0, to: &next, stack: &stack) }
            swap(&current, &next)
            if current.hasMatch && !anchoredEnd { return true }
            if current.threads.isEmpty && anchoredStart && !current.hasMatch { return false }
        }
        return current.hasMatch
    }

    private func step(_ instruction: RegexInstruction, scalar: UInt32, folded: UInt32) -> Bool {
        switch instruction {
        case .scalar(let s): return s == folded
        case .anyExceptNewline: return scalar != 10 && scalar != 13 && scalar != 0x2028 && scalar != 0x2029
        case .characterClass(let i):
            let c = classes[i]
            if !ignoreCase { return c.containsRaw(scalar) }
            // With `i`, a scalar is in the set if any of its case variants is; negation applies after.
            var found = c.inRanges(scalar) || c.inRanges(folded)
            if !found, let s = Unicode.Scalar(scalar) {
                let upper = s.properties.uppercaseMapping.unicodeScalars
                if upper.count == 1, let u = upper.first { found = c.inRanges(u.value) }
            }
            return found != c.negated
        case .split, .jump, .match: return false
        }
    }

    /// Adds `pc` and everything reachable from it without consuming input.
    private func addThread(_ start: Int, to list: inout ThreadList, stack: inout [Int]) {
        stack.removeAll(keepingCapacity: true)
        stack.append(start)
        while let pc = stack.popLast() {
            guard list.mark(pc) else { continue }
            switch instructions[pc] {
            case .jump(let target): stack.append(target)
            case .split(let a, let b):
                stack.append(b)
                stack.append(a)
            case .match: list.hasMatch = true
            default: list.threads.append(pc)
            }
        }
    }
}

/// The threads alive at one input position; `seen` is generation-stamped to avoid clearing it.
private struct ThreadList {
    var threads: [Int] = []
    var seen: [Int]
    var generation = 0
    var hasMatch = false

    init(capacity: Int) { seen = Array(repeating: 0, count: capacity) }

    mutating func reset(generation: Int) {
        threads.removeAll(keepingCapacity: true)
        self.generation = generation
        hasMatch = false
    }

    mutating func mark(_ pc: Int) -> Bool {
        if seen[pc] == generation { return false }
        seen[pc] = generation
        return true
    }
}
