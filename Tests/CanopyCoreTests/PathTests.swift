// PathTests -- parsing, validation limits, navigation and byte-exact equality of paths.

import Testing

@testable import CanopyCore

@Suite struct PathTests {
    @Test(arguments: [
        ("/", [String]()), ("", []), ("//", []), ("a", ["a"]), ("/a/b", ["a", "b"]), ("a/b/", ["a", "b"]),
        ("//a//b//", ["a", "b"]), ("/users/-Nx1_a", ["users", "-Nx1_a"]), ("/日本/😀", ["日本", "😀"]),
    ])
    func parses(_ text: String, _ segments: [String]) throws {
        #expect(try Path(parsing: text).segments == segments)
    }

    @Test(arguments: ["/a/./b", "/a$b", "/a#", "/a[0]", "/x]", "/a\u{1}", "/a/.priority", "/.info/x", "/a\u{7F}"])
    func rejectsInvalidSegments(_ text: String) {
        #expect(throws: DataError.self) { try Path(parsing: text) }
    }

    @Test func errorNamesValidPrefix() {
        #expect(throws: DataError(.invalidKey, atText: "/a")) { try Path(parsing: "/a/b$/c") }
        #expect(throws: DataError(.invalidKey, atText: "/")) { try Path(parsing: "$x") }
    }

    @Test func priorityLeaf() throws {
        let p = try Path(parsing: "/a/.priority", allowPriorityLeaf: true)
        #expect(p.segments == ["a", ".priority"])
        #expect(p.isPriorityPath)
        #expect(try !Path(parsing: "/a/b", allowPriorityLeaf: true).isPriorityPath)
        #expect(throws: DataError.self) { try Path(parsing: "/.priority/a", allowPriorityLeaf: true) }
        #expect(throws: DataError.self) { try Path(parsing: "/a/.value", allowPriorityLeaf: true) }
    }

    @Test func depthLimit() throws {
        let ok = String(repeating: "/k", count: 32)
        #expect(try Path(parsing: ok).count == 32)
        let tooDeep = String(repeating: "/k", count: 33)
        #expect(throws: DataError.self) { try Path(parsing: tooDeep) }
        do {
            _ = try Path(parsing: tooDeep)
        } catch {
            #expect(error.kind == .invalidPath)
            #expect(error.code == "invalid_path")
        }
    }

    @Test func keyLengthLimit() {
        #expect((try? Path(parsing: "/" + String(repeating: "a", count: 768))) != nil)
        #expect((try? Path(parsing: "/" + String(repeating: "a", count: 769))) == nil)
    }

    @Test func navigation() throws {
        let p = try Path(parsing: "/a/b/c")
        #expect(p.description == "/a/b/c")
        #expect(p.relativeDescription == "a/b/c")
        #expect(Path.root.description == "/")
        #expect(Path.root.isRoot && !p.isRoot)
        #expect(p.parent == Path(segments: ["a", "b"]))
        #expect(Path.root.parent == nil)
        #expect(p.lastKey == "c" && p.firstKey == "a")
        #expect(Path.root.lastKey == nil)
        #expect(Path(segments: ["a"]).child("b") == Path(segments: ["a", "b"]))
        #expect(Path(segments: ["a"]).appending(Path(segments: ["b", "c"])) == p)
        #expect(p.droppingFirst == Path(segments: ["b", "c"]))
    }

    @Test func ancestry() throws {
        let a = Path(segments: ["a"])
        let ab = Path(segments: ["a", "b"])
        let ax = Path(segments: ["ax"])
        #expect(a.isAncestor(of: ab))
        #expect(!a.isAncestor(of: a))
        #expect(a.isAncestorOrSelf(of: a))
        #expect(!a.isAncestor(of: ax))
        #expect(!ab.isAncestor(of: a))
        #expect(Path.root.isAncestor(of: a))
        #expect(ab.relative(to: a) == Path(segments: ["b"]))
        #expect(ab.relative(to: ab) == .root)
        #expect(ab.relative(to: .root) == ab)
        #expect(a.relative(to: ab) == nil)
        #expect(ax.relative(to: a) == nil)
    }

    @Test func equalityIsByExactBytes() {
        let composed = Path(segments: ["é"])
        let decomposed = Path(segments: ["e\u{301}"])
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed, Path(segments: ["é"])]).count == 2)
        #expect(!Path(segments: ["é"]).isAncestorOrSelf(of: Path(segments: ["e\u{301}", "x"])))
    }

    @Test func randomStringsParseOrFailCleanly() throws {
        var rng = SeededGenerator(seed: 3)
        let pieces = ["a", "/", "//", ".", "$", "é", "\u{0}", ".priority", "1", "[", " ", "😀"]
        for _ in 0..<3000 {
            let text = (0..<Int.random(in: 0...8, using: &rng)).map { _ in pieces.randomElement(using: &rng)! }.joined()
            guard let path = try? Path(parsing: text, allowPriorityLeaf: true) else { continue }
            #expect(path.segments.allSatisfy { Key.isValid($0) || $0 == ".priority" })
            #expect(try Path(parsing: path.description, allowPriorityLeaf: true) == path)
        }
    }
}
