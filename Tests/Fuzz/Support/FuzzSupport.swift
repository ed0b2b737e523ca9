// FuzzSupport -- what every libFuzzer target of Tests/Fuzz shares: the driver call and input helpers.
//
// SwiftPM links an executable target with its entry point renamed to `<Module>_main` (so tests could link it),
// which keeps libFuzzer's own `main` out of the link. Each target therefore has an `@main` that hands its
// `LLVMFuzzerTestOneInput` to `LLVMFuzzerRunDriver`, libFuzzer's documented entry for exactly this case.

public import CanopyCore

#if canImport(Glibc)
    import Glibc
#endif

/// The callback libFuzzer calls with each input.
public typealias FuzzCallback = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: FuzzCallback
) -> CInt

/// Runs libFuzzer over `callback` with the process's arguments (`-runs=`, `-dict=`, corpus directories, ...)
/// and exits with its status.
public func runFuzzer(_ callback: FuzzCallback) -> Never {
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, callback))
}

/// The input as a buffer (libFuzzer passes a null pointer for the empty input).
public func inputBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> UnsafeBufferPointer<UInt8> {
    UnsafeBufferPointer(start: data, count: data == nil ? 0 : size)
}

/// The input as a string, or nil when it is not valid UTF-8 (most text entry points take a `String`).
public func inputString(_ data: UnsafePointer<UInt8>?, _ size: Int) -> String? {
    String(validating: inputBytes(data, size), as: UTF8.self)
}

/// Splits the input at a byte: the pieces a target feeds one at a time (frames, chunks, parameters).
public func pieces(_ bytes: UnsafeBufferPointer<UInt8>, separator: UInt8) -> [ArraySlice<UInt8>] {
    Array(bytes).split(separator: separator, omittingEmptySubsequences: false)
}

/// Equality of JSON values in the model a written document is re-read in: as `==`, except that a double may come
/// back as the integer its JavaScript text reads as. A double of 1e15 or more is written with JavaScript's
/// shortest digits (`1444444444444444416.0` as `1444444444444444400`), which the parser keeps as an exact Int64;
/// that integer is the same IEEE double, so every client reads the same number.
public func equalAsWritten(_ original: JSONValue, _ reread: JSONValue) -> Bool {
    switch (original, reread) {
    case (.double(let d), .int(let i)): return Double(i) == d
    case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { equalAsWritten($0, $1) }
    case (.object(let a), .object(let b)):
        guard a.count == b.count else { return false }
        var byKey: [[UInt8]: JSONValue] = [:]  // keys compare by their bytes, as JSONValue's `==` does
        for member in b { byKey[Array(member.key.utf8)] = member.value }
        return a.allSatisfy { member in byKey[Array(member.key.utf8)].map { equalAsWritten(member.value, $0) } ?? false }
    default: return original == reread
    }
}

/// A small tree with children of every kind, for the targets that run queries, writes and rules against data.
public let fixtureRoot: Node = {
    let text = #"""
        {"users": {"ada": {"name": "Ada", "age": 36, ".priority": 2, "tags": {"a": true}},
                   "bob": {"name": "Bob", "age": 7.5, ".priority": "x"},
                   "cy": {"name": "Cy", "age": null}, "dee": {"age": -1, "name": {"first": "D"}},
                   "1": 1, "2": "two", "10": false, "-3": {".value": 3, ".priority": 1}},
         "scores": {"a": 3, "b": 1, "c": 2, "d": 2, "e": "z", "f": true, "g": {"x": 1}},
         "list": {"0": "x", "1": "y"}, "leaf": "v", "n": 42}
        """#
    guard let json = try? JSONValue.parse(text), let node = try? Node.from(json: json) else {
        fatalError("the fixture tree does not load")
    }
    return node
}()

/// Checks a query: its wire form decodes to itself, and `window(of:)` keeps exactly the children a plain
/// sort-filter-limit keeps (the bounded selection and the key fast path against the reference).
public func checkQuery(_ spec: QuerySpec, on node: Node) {
    guard (try? QuerySpec.fromWire(spec.wireObject())) == spec else {
        fatalError("a query's wire form does not decode to it: \(spec.wireObject())")
    }
    let window = spec.window(of: node)
    if spec.loadsAllData || node.children.isEmpty { return }
    var expected = spec.orderedChildren(of: node).filter { spec.isInRange($0) }
    switch spec.limit {
    case .first(let n)? where n < expected.count: expected.removeLast(expected.count - n)
    case .last(let n)? where n < expected.count: expected.removeFirst(expected.count - n)
    default: break
    }
    guard Set(window.childKeys) == Set(expected.map(\.key)), window.childCount == expected.count else {
        fatalError("window(of:) keeps \(window.childKeys), the reference \(expected.map(\.key)) for \(spec.wireObject())")
    }
}
