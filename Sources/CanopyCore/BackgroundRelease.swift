// BackgroundRelease -- the last reference to a large structure, dropped on a background thread.
//
// Freeing a tree is a walk: each node released, each unique one deallocated. A publish's computation used to free
// the memo it replaced and the nodes of its last walk (10,000 attendees' old content once they were rewritten)
// on the way to its commit. Nodes are immutable and reference counting is atomic, so any thread may drop the last
// reference; the caller must give up its own (`consume`), or whichever thread drops last frees. Only large
// structures are worth it: a small value is cheaper to free than a thread hand-off.

import Dispatch

/// Drops values on a background thread.
public enum BackgroundRelease {
    private static let queue = DispatchQueue(label: "canopy.release", qos: .utility)

    /// Takes `value` and drops it on the release thread. If the caller held the last reference, the value is
    /// freed there instead of on the caller's thread.
    public static func release<Value: Sendable>(_ value: consuming Value) {
        let box = Holder(value)
        queue.async { box.drop() }
    }

    /// A value held until it is handed to the release thread, for a closure that captured it: a closure cannot
    /// `consume` what it captured, so without this the value is freed wherever the closure is.
    public final class Handle<Value: Sendable>: @unchecked Sendable {
        // Touched by whoever holds the handle, one thread at a time (a closure run once, on its loop).
        private var held: Value?

        public init(_ value: consuming Value) { held = value }

        /// The value. Only before `release()`.
        public var value: Value {
            guard let held else { preconditionFailure("BackgroundRelease.Handle read after its release") }
            return held
        }

        /// Hands the value to the release thread; later calls do nothing.
        public func release() {
            guard let value = held.take() else { return }
            BackgroundRelease.release(consume value)
        }
    }

    /// A value on its way to the release thread.
    private final class Holder<Value: Sendable>: @unchecked Sendable {
        // Touched by `drop` only, once, on the release thread.
        private var value: Value?
        init(_ value: consuming Value) { self.value = value }
        func drop() { value = nil }
    }
}
