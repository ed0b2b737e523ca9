// ProxyThreads -- threads of its own for the proxy's blocking work (a forwarded request waits for the owner's
// answer; a relayed event stream waits for its next bytes), started as work arrives, up to a bound, and ended
// after they have been idle a while.
//
// Why not a concurrent DispatchQueue: libdispatch on Linux runs a concurrent queue's blocks on at most about one
// thread per core and does not add threads when they block, so on 2 cores the proxy forwarded two requests at
// a time, whatever the number of clients (`bench cluster`, via proxy: 1,748 writes/s at 16 connections against
// 1,176 at 1), and the owner saw them one batch at a time.

import Dispatch
import Foundation
import Synchronization

/// A growable set of threads running blocking jobs in FIFO order. `Sendable`; jobs may block for long.
final class ProxyThreads: Sendable {
    private struct State {
        /// Jobs waiting for a thread, oldest first from `head`.
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        /// Threads waiting on `wakeup` (counted until they wake: a woken thread uncounts itself).
        var idle = 0
        var threads = 0

        var pending: Int { jobs.count - head }
    }

    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    /// Threads at most; jobs beyond wait for one to finish.
    let maximumThreads: Int
    /// A thread idle this long ends.
    let idleSeconds: Int
    private let name: String

    init(maximumThreads: Int, idleSeconds: Int = 30, name: String = "canopy.proxy") {
        precondition(maximumThreads > 0)
        self.maximumThreads = maximumThreads
        self.idleSeconds = idleSeconds
        self.name = name
    }

    /// Threads alive now.
    var threadCount: Int { state.withLock { $0.threads } }

    /// Runs `job` on a pooled thread: an idle one, else a new one (below the bound), else the next to be free.
    func run(_ job: @escaping @Sendable () -> Void) {
        let (wake, start) = state.withLock { state in
            state.jobs.append(job)
            // Every idle thread will take one pending job; start one more for the rest, within the bound.
            let start = state.pending > state.idle && state.threads < maximumThreads
            if start { state.threads += 1 }
            return (state.idle > 0, start)
        }
        if wake { wakeup.signal() }
        if start {
            let thread = Thread { [self] in work() }
            thread.name = name
            thread.stackSize = 512 * 1024
            thread.start()
        }
    }

    private static let taken: @Sendable () -> Void = {}

    private func work() {
        var timedOut = false
        while true {
            let job: (@Sendable () -> Void)? = state.withLock { state in
                if state.head < state.jobs.count {
                    let job = state.jobs[state.head]
                    state.jobs[state.head] = ProxyThreads.taken  // release what the job captured
                    state.head += 1
                    if state.head >= 64 && state.head * 2 >= state.jobs.count {
                        state.jobs.removeFirst(state.head)
                        state.head = 0
                    }
                    return job
                }
                if timedOut {
                    state.threads -= 1
                    return nil
                }
                state.idle += 1
                return nil
            }
            if let job {
                timedOut = false
                job()
                continue
            }
            if timedOut { return }
            // A signal left over from a thread that timed out as it was posted only wakes this one for nothing.
            timedOut = wakeup.wait(timeout: .now() + .seconds(idleSeconds)) == .timedOut
            state.withLock { $0.idle -= 1 }
        }
    }
}
