// LoopBound -- carries a loop-confined object through a @Sendable closure back to its loop (weakly or strongly).

import CanopyNet

/// A reference to a loop-confined object that may travel across threads but is only dereferenced on its loop.
struct LoopBound<Value: AnyObject>: @unchecked Sendable {  // safe: `value` is read only after `assertInLoop()`
    private weak var storage: Value?
    private let loop: EventLoop

    init(_ value: Value, loop: EventLoop) {
        self.storage = value
        self.loop = loop
    }

    /// The object; call only on `loop`.
    var value: Value? {
        loop.assertInLoop()
        return storage
    }
}

/// A value (often loop-confined objects) carried through a @Sendable closure to be used on `loop` only.
/// Unlike `LoopBound` it holds the value strongly, so work handed to another thread keeps it alive.
struct LoopHeld<Value>: @unchecked Sendable {  // safe: `value` is read only after `assertInLoop()`
    private let storage: Value
    private let loop: EventLoop

    init(_ value: Value, loop: EventLoop) {
        self.storage = value
        self.loop = loop
    }

    /// The value; call only on `loop`.
    var value: Value {
        loop.assertInLoop()
        return storage
    }
}
