// EventLoop -- one thread, one level-triggered epoll set: readiness, timers, cross-thread tasks, hooks, signals.
//
// One pass of `run()` (after redis ae.c `aeProcessEvents` and NIO's SelectableEventLoop):
//   1. run the tasks queued by `execute(_:)`;
//   2. fire the timers whose deadline has passed; then run the answers (`executeAnswer(_:)`) other threads queued
//      meanwhile, when nothing else was queued before them, so they are written in this pass (see `pass`);
//   3. run the before-sleep hooks (the server group-commits writes here), then the flush hooks (connections
//      write the output they batched during the pass), each list in registration order; a flush hook that writes
//      for long runs the answers queued meanwhile (`runAnswersQueuedDuringFlush`), and the flush hooks then run
//      again;
//   4. `epoll_wait` for at most the time to the next timer (0 when tasks are queued, forever when idle or when
//      the injected clock only moves by hand: advancing a `ManualClock` wakes the loop);
//   5. dispatch each readiness event to the handler registered for its descriptor.
// Registrations are level-triggered: a handler that leaves input unread is simply called again on the next
// pass, and EPOLLOUT interest is held only while a connection has unwritten output. The epoll user data packs
// the descriptor with a registration generation, so a stale event for a descriptor number that was closed and
// reused within the same `epoll_wait` batch is dropped instead of reaching the new owner. Every deadline reads
// the loop's injected `MonotonicClock`, so tests move time by hand; `runPass()` drives one pass without blocking.
import CCanopyLinux
import CanopyCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Readiness reported for a registered descriptor.
package struct IOEvents: Sendable {
    package var isReadable: Bool
    package var isWritable: Bool
    /// Hang-up or error (reported even without interest): the handler should close.
    package var isHangup: Bool
}

/// One thread, one epoll set. Everything registered here is touched only on the loop's thread.
///
/// Thread-safe surface: ``execute(_:)``, ``executeAnswer(_:)``, ``stop()`` and ``inLoop``, through `pending`,
/// `stopRequested` and `owner`. Everything else is loop-confined: call it from the loop thread, or from any single thread
/// before ``run()`` starts (set-up) — ``assertInLoop()`` checks that in debug builds.
///
/// ```swift
/// let loop = try EventLoop()
/// let server = try HTTPServer(loop: loop, host: "127.0.0.1", port: 0, limits: .init(), handler: app)
/// try server.start()
/// loop.onSignals([SIGTERM, SIGINT]) { _ in server.shutdown(graceful: true) { loop.stop() } }
/// loop.run()   // blocks until stop()
/// ```
///
/// `@unchecked Sendable` is safe because cross-thread state is `Mutex`/`Atomic` and the rest is loop-confined.
public final class EventLoop: @unchecked Sendable {
    private static let maxEventsPerWait: Int32 = 256
    /// Size of the scratch buffer connections read into (shared: only one handler runs at a time).
    package static let readBufferSize = 64 * 1024

    /// The clock every timer and timeout on this loop reads.
    public let clock: any MonotonicClock
    private let epollFD: Int32
    private let wakeFD: Int32
    private var signalFD: Int32 = -1

    // Cross-thread state.
    /// A task queued by `execute` or `executeAnswer`.
    private struct Task {
        let work: @Sendable () -> Void
        let isAnswer: Bool
    }
    private let pending = Mutex<[Task]>([])
    private let stopRequested = Atomic<Bool>(false)
    /// pthread id of the thread inside `run()`, 0 when not running.
    private let owner = Atomic<UInt>(0)

    // Loop-confined state.
    private final class Registration {
        let generation: UInt32
        var interest: UInt32
        let handler: (IOEvents) -> Void
        init(generation: UInt32, interest: UInt32, handler: @escaping (IOEvents) -> Void) {
            self.generation = generation
            self.interest = interest
            self.handler = handler
        }
    }
    private var registrations: [Int32: Registration] = [:]
    private var nextGeneration: UInt32 = 1
    private var timers = TimerHeap()
    private var timerSequence: UInt64 = 0
    private var beforeSleepHooks: [() -> Void] = []
    private var flushHooks: [() -> Void] = []
    private var flushQueue: [() -> Void] = []
    /// Set when a flush hook ran answers (`runAnswersQueuedDuringFlush`): the hooks run again in that pass.
    private var answeredDuringFlush = false
    private var signalMask = sigset_t()
    private var signalHandlers: [Int32: (Int32) -> Void] = [:]
    /// Scratch buffer for socket reads; valid for the loop's lifetime.
    package let readBuffer: UnsafeMutableRawBufferPointer

    /// Creates the epoll set and its wake-up eventfd.
    /// - Parameter clock: the time timers and timeouts read; a ``ManualClock`` in tests.
    /// - Throws: ``NetError`` when the kernel refuses a descriptor.
    public init(clock: any MonotonicClock = SystemMonotonicClock.shared) throws {
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard ep >= 0 else { throw NetError.system(syscall: "epoll_create1", errno: ccanopy_errno()) }
        let wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wake >= 0 else {
            let code = ccanopy_errno()
            Glibc.close(ep)
            throw NetError.system(syscall: "eventfd", errno: code)
        }
        self.clock = clock
        epollFD = ep
        wakeFD = wake
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        sigemptyset(&signalMask)
        try register(fd: wake, readable: true, writable: false) { [unowned self] _ in self.drainWakeups() }
        clock.onAdvance { [weak self] in self?.wake() }
    }

    deinit {
        Glibc.close(wakeFD)
        if signalFD >= 0 { Glibc.close(signalFD) }
        Glibc.close(epollFD)
        readBuffer.deallocate()
    }

    // MARK: Thread identity

    /// True on the thread running ``run()``, and on any thread before the loop has started.
    public var inLoop: Bool {
        let current = owner.load(ordering: .acquiring)
        return current == 0 || current == UInt(pthread_self())
    }

    /// Traps (debug builds only) when called off the loop thread.
    public func assertInLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoop, "EventLoop: loop-confined API called off the loop thread", file: file, line: line)
    }

    // MARK: Running

    /// Runs the loop on the calling thread until ``stop()`` is called.
    public func run() {
        let me = UInt(pthread_self())
        let (exchanged, _) = owner.compareExchange(expected: 0, desired: me, ordering: .acquiringAndReleasing)
        precondition(exchanged, "EventLoop.run() called while the loop is already running")
        defer { owner.store(0, ordering: .releasing) }
        var events = [epoll_event](repeating: epoll_event(), count: Int(Self.maxEventsPerWait))
        while !stopRequested.load(ordering: .acquiring) {
            pass(events: &events, blocking: true)
        }
        stopRequested.store(false, ordering: .releasing)
    }

    /// Runs one pass on the calling thread without blocking: queued tasks, due timers, hooks and flushes, then
    /// whatever readiness the kernel reports now. For tests that drive a loop by hand (never while ``run()``
    /// runs on another thread).
    /// - Returns: the number of readiness events dispatched.
    @discardableResult
    package func runPass() -> Int {
        assertInLoop()
        var events = [epoll_event](repeating: epoll_event(), count: Int(Self.maxEventsPerWait))
        return pass(events: &events, blocking: false)
    }

    /// Whether a pass would find work without waiting for the kernel: queued tasks, due timers or flushes.
    package var hasImmediateWork: Bool {
        if pending.withLock({ !$0.isEmpty }) || !flushQueue.isEmpty { return true }
        guard let first = timers.first else { return false }
        return first.deadline <= clock.nowNanoseconds()
    }

    @discardableResult
    private func pass(events: inout [epoll_event], blocking: Bool) -> Int {
        runPendingTasks()
        runExpiredTimers()
        // Answers other threads queued while those ran (the writes of a batch made durable while this pass fanned
        // out that batch's events) are written in this pass, before its events, rather than one pass later, after
        // them. Only answers (they show no new data to other connections: a batch made visible now would add its
        // events to connections that have this pass's already), and only those queued before any other task (an
        // answer never overtakes what was queued before it, such as its batch becoming visible).
        runLeadingAnswers()
        for hook in beforeSleepHooks { hook() }
        for hook in flushHooks { hook() }
        // Answers a flush ran (`runAnswersQueuedDuringFlush`) may have written to connections of a hook that
        // already ran: the hooks run again so that output leaves in this pass too.
        while answeredDuringFlush {
            answeredDuringFlush = false
            for hook in flushHooks { hook() }
        }
        while !flushQueue.isEmpty {
            let queued = flushQueue
            flushQueue.removeAll()
            for flush in queued { flush() }
        }
        if stopRequested.load(ordering: .acquiring) { return 0 }
        let timeout = blocking ? waitTimeoutMilliseconds() : 0
        let count = events.withUnsafeMutableBufferPointer { buffer in
            epoll_wait(epollFD, buffer.baseAddress, Self.maxEventsPerWait, timeout)
        }
        if count < 0 {
            let code = ccanopy_errno()
            precondition(code == EINTR, "epoll_wait failed with errno \(code)")
            return 0
        }
        for index in 0..<Int(count) {
            dispatch(events[index])
        }
        return Int(count)
    }

    /// Asks the loop to return from ``run()`` after the current pass. Thread-safe.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wake()
    }

    /// Queues `work` to run on the loop thread at the start of the next pass. Thread-safe.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        enqueue(Task(work: work, isAnswer: false))
    }

    /// Queues `work`, which answers requests and shows nothing new, to run on the loop thread. Thread-safe.
    ///
    /// Like ``execute(_:)``, and more: queued by another thread while a pass runs its tasks, and with only other
    /// answers queued before it, `work` runs later in that pass, before its hooks and flushes, so what it writes
    /// leaves in that pass. `work` may write replies (a write's acknowledgement, a listen's first value) but must
    /// not make new data visible to other connections: events queued then would join those of the same pass, and
    /// a connection's output could grow by two batches of events between two writes.
    public func executeAnswer(_ work: @escaping @Sendable () -> Void) {
        enqueue(Task(work: work, isAnswer: true))
    }

    private func enqueue(_ task: Task) {
        let wasEmpty = pending.withLock { queue in
            queue.append(task)
            return queue.count == 1
        }
        // On the loop the queue is checked before sleeping; off it, one wake-up per batch is enough.
        if wasEmpty && owner.load(ordering: .acquiring) != UInt(pthread_self()) {
            wake()
        }
    }

    /// Schedules `work` on the loop after `afterMilliseconds` of the loop's ``clock``. Call on the loop.
    ///
    /// Any delay is accepted: a negative one runs `work` on the next pass, and one too long to represent
    /// (a token expiring in the year 300000) saturates to a deadline that is never reached.
    /// - Returns: a handle that cancels the timer.
    @discardableResult
    public func schedule(afterMilliseconds: Int64, _ work: @escaping () -> Void) -> TimerHandle {
        assertInLoop()
        let delay = UInt64(clamping: afterMilliseconds).multipliedSaturated(by: 1_000_000)
        timerSequence += 1
        let timer = TimerHandle(
            deadline: clock.nowNanoseconds().addingSaturated(delay), sequence: timerSequence, work: work, loop: self)
        timers.insert(timer)
        return timer
    }

    /// Adds a hook that runs once per loop pass, just before the loop sleeps. Call on the loop.
    ///
    /// Hooks run in registration order, before any connection flushes its batched output, so work
    /// started here (a group commit) is never overtaken by the replies of the same pass.
    public func addBeforeSleepHook(_ hook: @escaping () -> Void) {
        assertInLoop()
        beforeSleepHooks.append(hook)
    }

    /// Adds a hook that runs after all before-sleep hooks; used by servers to write batched output.
    package func addFlushHook(_ hook: @escaping () -> Void) {
        assertInLoop()
        flushHooks.append(hook)
    }

    /// Runs `flush` once in this pass's flush phase (after the flush hooks); for objects that batch output.
    package func enqueueFlush(_ flush: @escaping () -> Void) {
        assertInLoop()
        flushQueue.append(flush)
    }

    // MARK: Signals

    /// Delivers `signals` to `handler` on the loop through a signalfd. Call it on the thread that runs
    /// (or will run) the loop.
    ///
    /// The signals are blocked in the calling thread, and threads created afterwards inherit the mask.
    /// A thread that already existed with the signals unblocked runs a tiny forwarding handler that
    /// re-directs the signal at the loop thread, so the process never takes the default action for them.
    public func onSignals(_ signals: [Int32], _ handler: @escaping (Int32) -> Void) {
        assertInLoop()
        for signal in signals {
            sigaddset(&signalMask, signal)
            signalHandlers[signal] = handler
        }
        pthread_sigmask(SIG_BLOCK, &signalMask, nil)
        for signal in signals {
            let rc = ccanopy_forward_signal_to_thread(signal, pthread_self())
            precondition(rc == 0, "sigaction failed with errno \(ccanopy_errno())")
        }
        let fd = signalfd(signalFD, &signalMask, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
        precondition(fd >= 0, "signalfd failed with errno \(ccanopy_errno())")
        if signalFD < 0 {
            signalFD = fd
            do {
                try register(fd: fd, readable: true, writable: false) { [unowned self] _ in self.drainSignals() }
            } catch {
                preconditionFailure("cannot register signalfd: \(error)")
            }
        }
    }

    private func drainSignals() {
        var info = signalfd_siginfo()
        let size = MemoryLayout<signalfd_siginfo>.size
        while Glibc.read(signalFD, &info, size) == size {
            let signal = Int32(bitPattern: info.ssi_signo)
            signalHandlers[signal]?(signal)
        }
    }

    // MARK: Descriptors (package API for sockets)

    /// Registers `fd` with the given interest; `handler` runs on the loop for each readiness event.
    package func register(
        fd: Int32, readable: Bool, writable: Bool, handler: @escaping (IOEvents) -> Void
    ) throws(NetError) {
        assertInLoop()
        precondition(registrations[fd] == nil, "descriptor \(fd) is already registered")
        let registration = Registration(
            generation: nextGeneration, interest: Self.interest(readable: readable, writable: writable),
            handler: handler)
        nextGeneration &+= 1
        var event = epoll_event()
        event.events = registration.interest
        event.data.u64 = Self.userData(fd: fd, generation: registration.generation)
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else {
            throw NetError.system(syscall: "epoll_ctl(ADD)", errno: ccanopy_errno())
        }
        registrations[fd] = registration
    }

    /// Changes the interest of a registered descriptor; a no-op when it is unchanged.
    package func setInterest(fd: Int32, readable: Bool, writable: Bool) {
        assertInLoop()
        guard let registration = registrations[fd] else { return }
        let interest = Self.interest(readable: readable, writable: writable)
        guard interest != registration.interest else { return }
        registration.interest = interest
        var event = epoll_event()
        event.events = interest
        event.data.u64 = Self.userData(fd: fd, generation: registration.generation)
        let rc = epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event)
        assert(rc == 0, "epoll_ctl(MOD) failed with errno \(ccanopy_errno())")
    }

    /// Removes `fd` from the epoll set. Call before closing the descriptor.
    package func unregister(fd: Int32) {
        assertInLoop()
        guard registrations.removeValue(forKey: fd) != nil else { return }
        var event = epoll_event()
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
    }

    // MARK: Internals

    func cancelTimer(_ timer: TimerHandle) {
        assertInLoop()
        timers.remove(timer)
        timer.work = nil
    }

    private static func interest(readable: Bool, writable: Bool) -> UInt32 {
        var bits: UInt32 = 0
        if readable { bits |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if writable { bits |= EPOLLOUT.rawValue }
        return bits
    }

    private static func userData(fd: Int32, generation: UInt32) -> UInt64 {
        UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
    }

    private func dispatch(_ event: epoll_event) {
        let data = event.data.u64
        let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: data))
        let generation = UInt32(truncatingIfNeeded: data >> 32)
        guard let registration = registrations[fd], registration.generation == generation else { return }
        let bits = event.events
        let hangup = EPOLLHUP.rawValue | EPOLLERR.rawValue
        // A peer's half-close (RDHUP) is reported as readable: the read returns end-of-file.
        registration.handler(
            IOEvents(
                isReadable: bits & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue) != 0,
                isWritable: bits & EPOLLOUT.rawValue != 0,
                isHangup: bits & hangup != 0))
    }

    private func runPendingTasks() {
        let tasks = pending.withLock { queue in
            let taken = queue
            queue.removeAll(keepingCapacity: true)
            return taken
        }
        for task in tasks { task.work() }
    }

    /// For a flush hook that writes for long (a fan-out's events to 1,000 WebSockets): runs the answers other
    /// threads queued since the pass ran its tasks, under the same condition as the pass does (only answers, and
    /// only those with nothing else queued before them), so an answer made durable meanwhile leaves with this
    /// pass's first writes instead of after all of them. Call on the loop, from a flush hook. What the answers
    /// write is flushed in this pass: the flush hooks run again after the last one.
    /// - Returns: whether any answer ran.
    package func runAnswersQueuedDuringFlush() -> Bool {
        assertInLoop()
        guard runLeadingAnswers() else { return false }
        answeredDuringFlush = true
        return true
    }

    /// Runs the answers at the head of the queue (up to the first other task), once.
    /// - Returns: whether any answer ran.
    @discardableResult
    private func runLeadingAnswers() -> Bool {
        let answers = pending.withLock { queue -> [Task] in
            guard let end = queue.firstIndex(where: { !$0.isAnswer }) else {
                defer { queue.removeAll(keepingCapacity: true) }
                return queue
            }
            guard end > 0 else { return [] }
            defer { queue.removeFirst(end) }
            return Array(queue[..<end])
        }
        for answer in answers { answer.work() }
        return !answers.isEmpty
    }

    private func runExpiredTimers() {
        guard !timers.isEmpty else { return }
        let now = clock.nowNanoseconds()
        // Timers scheduled by a firing timer wait for the next pass, even with a zero delay.
        var due: [TimerHandle] = []
        while let first = timers.first, first.deadline <= now {
            _ = timers.popFirst()
            due.append(first)
        }
        for timer in due {
            let work = timer.work
            timer.work = nil
            work?()
        }
    }

    private func waitTimeoutMilliseconds() -> Int32 {
        if pending.withLock({ !$0.isEmpty }) { return 0 }
        guard let first = timers.first else { return -1 }
        let now = clock.nowNanoseconds()
        guard first.deadline > now else { return 0 }
        guard clock.advancesOnItsOwn else { return -1 }  // woken by the clock when it is moved
        let milliseconds = (first.deadline - now).addingSaturated(999_999) / 1_000_000
        return Int32(min(milliseconds, UInt64(Int32.max)))
    }

    private func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, MemoryLayout<UInt64>.size)
    }

    private func drainWakeups() {
        var value: UInt64 = 0
        _ = Glibc.read(wakeFD, &value, MemoryLayout<UInt64>.size)
    }
}
