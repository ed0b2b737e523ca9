// TimerHeap -- the event loop's binary min-heap of timers, with O(log n) cancellation.

/// A timer scheduled on an ``EventLoop``; keep it to cancel the timer.
///
/// Loop-confined: create, cancel and inspect it only on the loop's thread.
public final class TimerHandle {
    /// Monotonic deadline in nanoseconds.
    let deadline: UInt64
    /// Tie-breaker so timers with equal deadlines fire in scheduling order.
    let sequence: UInt64
    /// Position in the heap, or -1 once fired or cancelled.
    var heapIndex = -1
    var work: (() -> Void)?
    weak var loop: EventLoop?

    init(deadline: UInt64, sequence: UInt64, work: @escaping () -> Void, loop: EventLoop) {
        self.deadline = deadline
        self.sequence = sequence
        self.work = work
        self.loop = loop
    }

    /// True until the timer fires or is cancelled.
    public var isActive: Bool { heapIndex >= 0 }

    /// Cancels the timer; does nothing if it already fired or was cancelled. Call on the loop.
    public func cancel() {
        guard isActive, let loop else { return }
        loop.cancelTimer(self)
    }

    fileprivate func isEarlier(than other: TimerHandle) -> Bool {
        deadline != other.deadline ? deadline < other.deadline : sequence < other.sequence
    }
}

/// A binary min-heap ordered by deadline then sequence. Each handle knows its index, so removal
/// of an arbitrary timer (connection timeouts are cancelled far more often than they fire) is O(log n).
struct TimerHeap {
    private var items: [TimerHandle] = []

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    var first: TimerHandle? { items.first }

    mutating func insert(_ timer: TimerHandle) {
        precondition(timer.heapIndex < 0, "timer is already scheduled")
        items.append(timer)
        timer.heapIndex = items.count - 1
        siftUp(items.count - 1)
    }

    mutating func remove(_ timer: TimerHandle) {
        let index = timer.heapIndex
        precondition(index >= 0 && index < items.count && items[index] === timer, "timer is not in this heap")
        let last = items.count - 1
        if index != last {
            swapAt(index, last)
        }
        items.removeLast()
        timer.heapIndex = -1
        if index < items.count {
            siftDown(index)
            siftUp(index)
        }
    }

    mutating func popFirst() -> TimerHandle? {
        guard let top = items.first else { return nil }
        remove(top)
        return top
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        items.swapAt(a, b)
        items[a].heapIndex = a
        items[b].heapIndex = b
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].isEarlier(than: items[parent]) else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count && items[left].isEarlier(than: items[smallest]) { smallest = left }
            if right < items.count && items[right].isEarlier(than: items[smallest]) { smallest = right }
            if smallest == parent { return }
            swapAt(parent, smallest)
            parent = smallest
        }
    }
}
