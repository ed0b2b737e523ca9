// ParallelMap -- a pure transform of many items spread over the machine's cores, and a pure part of a computation
// run beside the rest of it (`ConcurrentPart`).
//
// A publish compares thousands of locations and turns thousands of writes into store rows; each is a pure
// function of immutable nodes (`Node` is Sendable, its hash cache is locked). On the 2-core machine the loop and
// store threads are idle while the compute thread does that, so it uses both cores.

import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension Array where Element: Sendable {
    /// `map(transform)`, computed in contiguous chunks on up to as many threads as there are cores when there
    /// are at least `minimumPerChunk` items per chunk; in order. `transform` must be pure (it runs concurrently).
    ///
    /// Inlinable, so that it is specialized for its caller's types: generic, a publish's 10,051 comparisons
    /// looked up type metadata per item and joined the chunks through a generic iterator, about 2 ms of its
    /// critical path.
    @inlinable
    public func parallelMap<T: Sendable>(minimumPerChunk: Int, _ transform: @Sendable (Element) -> T) -> [T] {
        let chunks = Swift.min(ParallelMap.cores, count / Swift.max(minimumPerChunk, 1))
        guard chunks > 1 else { return map(transform) }
        let results = ParallelMap.Results<T>(chunks: chunks)
        let size = (count + chunks - 1) / chunks
        self.withUnsafeBufferPointer { items in
            let shared = ParallelMap.Items(items)
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                let range = (chunk * size)..<Swift.min(shared.items.count, (chunk + 1) * size)
                results.store(chunk, shared.items[range].map(transform))
            }
        }
        return results.joined()
    }
}

/// The helpers of `parallelMap`.
public enum ParallelMap {
    /// The cores the process may use (at most 8).
    public static let cores: Int = {
        #if canImport(Glibc)
            return Swift.max(1, Swift.min(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 8))
        #else
            return 1
        #endif
    }()

    /// The input, shared read-only by the chunks while `parallelMap` waits for them.
    @usableFromInline
    struct Items<Element: Sendable>: @unchecked Sendable {
        @usableFromInline let items: UnsafeBufferPointer<Element>
        @inlinable init(_ items: UnsafeBufferPointer<Element>) { self.items = items }
    }

    /// One slot per chunk, each written once by its chunk, read after all have finished.
    @usableFromInline
    final class Results<T: Sendable>: Sendable {
        @usableFromInline let slots: Mutex<[[T]]>

        @inlinable init(chunks: Int) { slots = Mutex(Array(repeating: [], count: chunks)) }

        @inlinable func store(_ chunk: Int, _ values: sending [T]) {
            slots.withLock { $0[chunk] = values }
        }

        /// The chunks' values in order: the first chunk's array, taken, with the others appended.
        @inlinable func joined() -> [T] {
            slots.withLock { slots in
                guard !slots.isEmpty else { return [] }
                var out: [T] = []
                swap(&out, &slots[0])
                out.reserveCapacity(slots.reduce(out.count) { $0 + $1.count })
                for index in slots.indices.dropFirst() { out.append(contentsOf: slots[index]) }
                return out
            }
        }
    }
}

/// A pure computation started on another thread, whose result the starter takes later (`value()`), so two
/// independent parts of one computation use two cores.
public final class ConcurrentPart<T: Sendable>: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let result = Mutex<T?>(nil)

    /// Starts `body` on a global queue at once.
    public init(_ body: @escaping @Sendable () -> T) {
        DispatchQueue.global(qos: .userInitiated).async {
            let value = body()
            self.result.withLock { $0 = value }
            self.done.signal()
        }
    }

    /// Waits for `body` to finish and returns what it returned. Call once.
    public func value() -> T {
        done.wait()
        return result.withLock { $0.take()! }
    }
}
