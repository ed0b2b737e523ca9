// EventLoopTests -- cross-thread tasks, hook order, signals and descriptor registration on a real loop.
import CanopyNet
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a fresh loop on its own thread; `setUp` runs on that thread before `run()`.
final class LoopThread: Sendable {
    let loop: EventLoop
    private let thread = Mutex<pthread_t?>(nil)
    private let finished = DispatchSemaphore(value: 0)
    private let started = DispatchSemaphore(value: 0)

    init(clock: any MonotonicClock = SystemMonotonicClock.shared, setUp: @escaping @Sendable (EventLoop) -> Void = { _ in })
        throws
    {
        let loop = try EventLoop(clock: clock)
        self.loop = loop
        let (startedSignal, finishedSignal) = (started, finished)
        Thread { [self] in
            thread.withLock { $0 = pthread_self() }
            setUp(loop)
            startedSignal.signal()
            loop.run()
            finishedSignal.signal()
        }.start()
        startedSignal.wait()
        // One round trip, so run() has taken ownership of its thread when init returns.
        let running = DispatchSemaphore(value: 0)
        loop.execute { running.signal() }
        running.wait()
    }

    var pthread: pthread_t { thread.withLock { $0! } }

    func stopAndWait() {
        loop.stop()
        finished.wait()
    }
}

@Suite(.timeLimit(.minutes(1))) struct EventLoopTests {
    @Test func tasksFromManyThreadsAllRunOnTheLoopInPerThreadOrder() throws {
        let runner = try LoopThread()
        let seen = Mutex<[Int: [Int]]>([:])
        let wrongThread = Counter()
        let group = DispatchGroup()
        for producer in 0..<4 {
            DispatchQueue.global().async(group: group) {
                for index in 0..<500 {
                    runner.loop.execute {
                        if !runner.loop.inLoop { wrongThread.increment() }
                        seen.withLock { $0[producer, default: []].append(index) }
                    }
                }
            }
        }
        group.wait()
        let done = DispatchSemaphore(value: 0)
        runner.loop.execute { done.signal() }
        done.wait()
        runner.stopAndWait()
        let result = seen.withLock { $0 }
        #expect(wrongThread.value == 0)
        for producer in 0..<4 { #expect(result[producer] == Array(0..<500)) }
    }

    @Test func loopIsNotInLoopFromOtherThreadsWhileRunning() throws {
        let runner = try LoopThread()
        defer { runner.stopAndWait() }
        #expect(!runner.loop.inLoop)
    }

    @Test func beforeSleepHooksRunBeforeFlushAndOncePerPass() throws {
        let order = Mutex<[String]>([])
        let runner = try LoopThread { loop in
            loop.addBeforeSleepHook { order.withLock { $0.append("hook") } }
        }
        let done = DispatchSemaphore(value: 0)
        runner.loop.execute {
            order.withLock { $0.append("task") }
            done.signal()
        }
        done.wait()
        runner.stopAndWait()
        let events = order.withLock { $0 }
        let taskIndex = try #require(events.firstIndex(of: "task"))
        // The task's pass ends with a hook run before the loop sleeps again.
        #expect(events.count > taskIndex + 1 && events[taskIndex + 1] == "hook")
    }

    /// Runs `work` on a thread of its own and waits for it (a store thread queueing tasks while the loop is busy).
    private func onAnotherThread(_ work: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            work()
            done.signal()
        }.start()
        done.wait()
    }

    /// Runs one pass by hand whose first task makes another thread queue `queue`'s tasks (and waits for it), then
    /// returns what ran, in order, with "hook" and "flush" marking the pass's before-sleep hooks and flushes.
    private func passWithTasksQueuedMeanwhile(
        _ queue: @escaping @Sendable (EventLoop, _ record: @escaping @Sendable (String) -> Void) -> Void
    ) throws -> [String] {
        let loop = try EventLoop(clock: ManualClock())
        let order = Mutex<[String]>([])
        loop.addBeforeSleepHook { order.withLock { $0.append("hook") } }
        loop.addFlushHook { order.withLock { $0.append("flush") } }
        loop.execute {
            onAnotherThread { queue(loop) { name in order.withLock { $0.append(name) } } }
            order.withLock { $0.append("first") }
        }
        loop.runPass()
        loop.runPass()
        return order.withLock { $0 }
    }

    @Test func anAnswerQueuedByAnotherThreadWhileTasksRunIsWrittenInThatPass() throws {
        // A store thread makes a batch durable while the loop fans out its events: the writers' answers run in
        // that pass, before its hooks and flushes, so they leave with it rather than one pass later.
        let order = try passWithTasksQueuedMeanwhile { loop, record in
            loop.executeAnswer { record("answer 1") }
            loop.executeAnswer { record("answer 2") }
        }
        #expect(order == ["first", "answer 1", "answer 2", "hook", "flush", "hook", "flush"])
    }

    @Test func anAnswerNeverOvertakesATaskQueuedBeforeIt() throws {
        // Queued after another task (a batch becoming visible), an answer waits with it for the next pass; a task
        // queued meanwhile that is not an answer waits too.
        let order = try passWithTasksQueuedMeanwhile { loop, record in
            loop.executeAnswer { record("answer 1") }
            loop.execute { record("visible") }
            loop.executeAnswer { record("answer 2") }
        }
        #expect(order == ["first", "answer 1", "hook", "flush", "visible", "answer 2", "hook", "flush"])
    }

    @Test func aFlushRunsTheAnswersQueuedWhileItWritesAndTheFlushHooksRunAgain() throws {
        // A store thread makes a publish durable while a flush hook writes its events: the hook runs the answer
        // at once, and every flush hook runs again in that pass, so what the answer wrote (perhaps for a hook that
        // already ran) leaves in it.
        let loop = try EventLoop(clock: ManualClock())
        let order = Mutex<[String]>([])
        let answered = Mutex<[Bool]>([])
        loop.addBeforeSleepHook { order.withLock { $0.append("hook") } }
        loop.addFlushHook { order.withLock { $0.append("flush A") } }
        loop.addFlushHook {
            order.withLock { $0.append("flush B") }
            guard answered.withLock({ $0.isEmpty }) else { return }
            onAnotherThread { loop.executeAnswer { order.withLock { $0.append("answer") } } }
            let ran = loop.runAnswersQueuedDuringFlush()
            answered.withLock { $0.append(ran) }
            // Nothing is left to run: a second look finds no answer and does not make the hooks run again.
            answered.withLock { $0.append(loop.runAnswersQueuedDuringFlush()) }
        }
        loop.execute { order.withLock { $0.append("first") } }
        loop.runPass()
        #expect(answered.withLock { $0 } == [true, false])
        #expect(order.withLock { $0 } == ["first", "hook", "flush A", "flush B", "answer", "flush A", "flush B"])
    }

    @Test func aFlushLeavesAnAnswerQueuedBehindAnotherTask() throws {
        // Queued behind a task that is not an answer (the next batch becoming visible), an answer waits for the
        // next pass, with that task before it, and the hooks do not run again.
        let loop = try EventLoop(clock: ManualClock())
        let order = Mutex<[String]>([])
        let ran = Mutex<[Bool]>([])
        loop.addFlushHook {
            order.withLock { $0.append("flush") }
            guard ran.withLock({ $0.isEmpty }) else { return }
            onAnotherThread {
                loop.execute { order.withLock { $0.append("visible") } }
                loop.executeAnswer { order.withLock { $0.append("answer") } }
            }
            ran.withLock { $0.append(loop.runAnswersQueuedDuringFlush()) }
        }
        loop.runPass()
        loop.runPass()
        #expect(ran.withLock { $0 } == [false])
        #expect(order.withLock { $0 } == ["flush", "visible", "answer", "flush"])
    }

    @Test func signalsReachTheHandlerOnTheLoop() throws {
        let received = Mutex<[Int32]>([])
        let runner = try LoopThread { loop in
            loop.onSignals([SIGUSR2]) { signal in received.withLock { $0.append(signal) } }
        }
        // A second loop watching another signal (as an in-process daemon watches SIGTERM while tests run in
        // parallel) must not take over where SIGUSR2 is forwarded to.
        let other = try LoopThread { loop in loop.onSignals([SIGURG]) { _ in } }
        defer {
            runner.stopAndWait()
            other.stopAndWait()
            signal(SIGUSR2, SIG_IGN)  // the forwarding handlers must not outlive the loop threads
            signal(SIGURG, SIG_DFL)
        }
        // Directed at the loop thread, where the signal is blocked: the signalfd sees it.
        pthread_kill(runner.pthread, SIGUSR2)
        #expect(eventually { received.withLock { $0 } == [SIGUSR2] })
        // Directed at the process: any test-runner thread (started before onSignals, signal unblocked)
        // may take it; it is forwarded to the loop instead of killing the process.
        kill(getpid(), SIGUSR2)
        #expect(eventually { received.withLock { $0 } == [SIGUSR2, SIGUSR2] })
    }
}
