// FanoutRound -- one benchmark round on an event loop: connect N subscribers, then pump windowed writes.

import CanopyCore
import CanopyNet

/// A server the round drives: Canopy over the Firebase wire protocol, or Redis pub/sub over RESP.
protocol FanoutTransport: AnyObject {
    /// Opens subscriber `index`; it calls the round's `subscriberReady`, `deliver` and `fail` on the loop.
    func openSubscriber(_ index: Int, round: FanoutRound) throws
    /// Opens the writer; it calls the round's `writerReady` once it may write.
    func openWriter(round: FanoutRound) throws
    /// Sends one write; `subscriber` is the receiving subscriber when each has its own location, else nil.
    func write(seq: Int, payload: String, subscriber: Int?)
    /// Closes every connection, then calls `done` on the loop once they are gone.
    func closeAll(then done: @escaping () -> Void)
}

/// Drives one round. All state is loop-confined.
final class FanoutRound: @unchecked Sendable {  // safe: every member is touched only on `loop`'s thread
    private static let maxConnecting = 128
    private static let setUpTimeoutMs: Int64 = 120_000
    private static let measureTimeoutMs: Int64 = 180_000
    /// A round whose deliveries stop for this long has lost events: it ends instead of waiting for them.
    private static let stallTimeoutMs: Int64 = 3_000

    let loop: EventLoop
    let subscribers: Int
    /// True when each subscriber has its own location and writes go round-robin across them.
    let spread: Bool
    let tracker: FanoutTracker
    /// The padding of every write's payload (see `FanoutPayload.json`).
    var payloadText = "hello"
    private let transport: any FanoutTransport
    private let onListening: () -> Void
    private let onFinished: () -> Void
    private var opened = 0
    private var ready = 0
    private var writerOpen = false
    private var finishing = false
    private var timer: TimerHandle?
    private var stallCheck: TimerHandle?
    private var deliveredAtLastCheck = 0
    /// Why the round stopped early, if it did.
    private(set) var failure: String?

    /// - Parameters:
    ///   - onListening: runs on the loop once every subscriber listens (before the writer connects).
    ///   - onFinished: runs on the loop when the round ends, before any connection closes.
    init(
        loop: EventLoop, transport: any FanoutTransport, subscribers: Int, spread: Bool, tracker: FanoutTracker,
        onListening: @escaping () -> Void, onFinished: @escaping () -> Void = {}
    ) {
        self.loop = loop
        self.transport = transport
        self.subscribers = subscribers
        self.spread = spread
        self.tracker = tracker
        self.onListening = onListening
        self.onFinished = onFinished
    }

    /// Runs the round on the calling thread; returns when it has finished or failed and every socket is closed.
    func run() {
        loop.execute { self.start() }
        loop.run()
    }

    private func start() {
        timer = loop.schedule(afterMilliseconds: Self.setUpTimeoutMs) { [self] in
            fail("timed out with \(ready) of \(subscribers) subscribers listening")
        }
        openMore()
    }

    private func openMore() {
        while !finishing && opened < subscribers && opened - ready < Self.maxConnecting {
            do {
                try transport.openSubscriber(opened, round: self)
            } catch {
                fail("subscriber \(opened) could not connect: \(error)")
                return
            }
            opened += 1
        }
    }

    // MARK: Called by transports

    func subscriberReady() {
        guard !finishing else { return }
        ready += 1
        if ready < subscribers {
            openMore()
            return
        }
        onListening()
        timer?.cancel()
        timer = loop.schedule(afterMilliseconds: Self.measureTimeoutMs) { [self] in
            fail("timed out after \(tracker.completed) of \(tracker.writes) writes were fully delivered")
        }
        stallCheck = loop.schedule(afterMilliseconds: Self.stallTimeoutMs) { [self] in checkProgress() }
        do {
            try transport.openWriter(round: self)
        } catch {
            fail("the writer could not connect: \(error)")
        }
    }

    func writerReady() {
        guard !finishing else { return }
        writerOpen = true
        pump()
    }

    func deliver(seq: Int, sentAt: UInt64, subscriber: Int? = nil) {
        guard !finishing else { return }
        if tracker.record(seq: seq, sentAt: sentAt, subscriber: subscriber) {
            if tracker.isDone {
                finish()
            } else {
                pump()
            }
        }
    }

    func fail(_ reason: String) {
        guard !finishing else { return }
        failure = reason
        finish()
    }

    // MARK: Internals

    private func pump() {
        while writerOpen && tracker.canSend {
            let (seq, sentAt) = tracker.nextWrite()
            let payload = FanoutPayload.json(seq: seq, sentAt: sentAt, text: payloadText)
            transport.write(seq: seq, payload: payload, subscriber: spread ? seq % subscribers : nil)
        }
    }

    private func checkProgress() {
        guard !finishing else { return }
        if writerOpen && tracker.delivered == deliveredAtLastCheck {
            let missing = tracker.sent * tracker.deliveriesPerWrite - tracker.delivered
            return fail("stalled: \(missing) events of \(tracker.sent) sent writes never arrived")
        }
        deliveredAtLastCheck = tracker.delivered
        stallCheck = loop.schedule(afterMilliseconds: Self.stallTimeoutMs) { [self] in checkProgress() }
    }

    private func finish() {
        guard !finishing else { return }
        finishing = true
        timer?.cancel()
        timer = nil
        stallCheck?.cancel()
        stallCheck = nil
        onFinished()
        transport.closeAll { [loop] in loop.stop() }
    }
}
