// TestSupport -- temporary directories and a readable dump of a store's rows for assertions.
import CanopyCore
import Foundation
import Synchronization

@testable import CanopyStore

/// A fresh directory under the system temp folder, removed when released.
final class TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "canopy-store-tests-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A file path inside the directory.
    func file(_ name: String = "test.sqlite") -> String { path + "/" + name }
}

/// Text of a primitive for comparisons (JSONValue need not be Equatable here).
func text(_ value: JSONValue?) -> String {
    guard let value else { return "-" }
    if case .null = value { return "null" }
    return (try? LeafCodec.encode(value, path: [])) ?? "<invalid>"
}

/// Every stored row as "path=value" or "path=value^priority" (priority rows: "path^priority"), in key order.
func rows(of store: NamespaceStore) throws -> [String] {
    var rows: [String] = []
    try store.loadAll { entry in
        let path = "/" + entry.path.joined(separator: "/")
        let priority = entry.priority.map { "^" + text($0) } ?? ""
        switch entry.kind {
        case .leaf: rows.append(path + "=" + text(entry.value) + priority)
        case .priority: rows.append(path + priority)
        }
    }
    return rows
}

/// Submits `mutations` and waits for the completion.
@discardableResult
func write(_ store: NamespaceStore, _ mutations: [StoreMutation]) -> Result<UInt64, StoreError> {
    let done = DispatchSemaphore(value: 0)
    let outcome = ResultBox()
    store.submit(mutations) { result in
        outcome.set(result)
        done.signal()
    }
    done.wait()
    return outcome.get()!
}

/// Submits `mutations`, waits, and returns the revision or throws the failure.
@discardableResult
func commit(_ store: NamespaceStore, _ mutations: [StoreMutation]) throws -> UInt64 {
    try write(store, mutations).get()
}

/// A thread-safe slot for a completion's result.
final class ResultBox: Sendable {
    private let slot = Mutex<Result<UInt64, StoreError>?>(nil)
    func set(_ result: Result<UInt64, StoreError>) { slot.withLock { $0 = result } }
    func get() -> Result<UInt64, StoreError>? { slot.withLock { $0 } }
}

/// Shorthand for a leaf write.
func leaf(_ path: String, _ value: JSONValue, priority: JSONValue? = nil) -> StoreMutation {
    .putLeaf(path: split(path), value: value, priority: priority)
}

/// Shorthand for a subtree delete.
func delete(_ path: String) -> StoreMutation { .deleteSubtree(path: split(path)) }

/// "a/b" -> ["a", "b"]; "" -> [].
func split(_ path: String) -> [String] {
    path.isEmpty ? [] : path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
}
