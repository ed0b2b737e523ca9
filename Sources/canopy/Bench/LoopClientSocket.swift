// LoopClientSocket -- one non-blocking TCP client socket on an EventLoop, for the benchmarks' own clients
// (FanoutRESPConnection, LoopHTTPConnection): connect, buffered output, input handed over as it arrives.

import CanopyNet

/// A TCP client connection on an EventLoop. Loop-confined. Its owner parses what ``onInput`` hands over and
/// queues what to send; the socket does the connecting, writing, reading and closing.
final class LoopClientSocket {
    private let loop: EventLoop
    private let fd: Int32
    private var connected = false
    private(set) var closed = false
    private var output: [UInt8] = []
    private var outputOffset = 0
    private var isFlushQueued = false

    /// Called once the TCP connection is established.
    var onOpen: (() -> Void)?
    /// Called with the bytes of each read (valid only during the call).
    var onInput: ((UnsafeRawBufferPointer) -> Void)?
    /// Called once when the connection fails or the server closes it.
    var onFailure: ((String) -> Void)?

    init(loop: EventLoop, host: String, port: Int) throws(NetError) {
        self.loop = loop
        fd = try Socket.connect(host: host, port: port)
        do {
            // The registration holds the connection strongly until close().
            try loop.register(fd: fd, readable: false, writable: true) { events in self.handle(events) }
        } catch {
            Socket.close(fd)
            throw error
        }
    }

    /// Appends bytes to the output without writing them yet.
    func queue<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        guard !closed else { return }
        output.append(contentsOf: bytes)
    }

    /// Writes what is queued now (once connected).
    func flush() { writeOutput() }

    /// Writes what is queued at the end of this loop pass, once however many times it is asked.
    func flushAtEndOfPass() {
        guard connected, !closed, !isFlushQueued else { return }
        isFlushQueued = true
        loop.enqueueFlush { [weak self] in
            guard let self else { return }
            self.isFlushQueued = false
            self.writeOutput()
        }
    }

    /// Closes the socket now; no callbacks follow.
    func close() {
        guard !closed else { return }
        closed = true
        onOpen = nil
        onInput = nil
        onFailure = nil
        loop.unregister(fd: fd)
        Socket.close(fd)
    }

    /// Closes the socket and reports `reason` to ``onFailure``.
    func fail(_ reason: String) {
        let callback = onFailure
        close()
        callback?(reason)
    }

    private func handle(_ events: IOEvents) {
        guard !closed else { return }
        if !connected {
            guard events.isWritable || events.isHangup else { return }
            let error = Socket.pendingError(fd)
            guard error == 0 else { return fail("connect failed (errno \(error))") }
            connected = true
            let callback = onOpen
            onOpen = nil
            callback?()
            writeOutput()
            return
        }
        if events.isWritable { writeOutput() }
        if events.isReadable || events.isHangup { readOnce() }
    }

    private func readOnce() {
        switch Socket.read(fd, into: loop.readBuffer) {
        case .transferred(let count):
            onInput?(UnsafeRawBufferPointer(rebasing: loop.readBuffer[0..<count]))
        case .wouldBlock:
            return
        case .endOfFile, .failed:
            fail("the server closed the connection")
        }
    }

    private func writeOutput() {
        guard connected, !closed else { return }
        while outputOffset < output.count {
            let result = output.withUnsafeBytes { raw in
                Socket.write(fd, UnsafeRawBufferPointer(rebasing: raw[outputOffset...]))
            }
            guard case .transferred(let count) = result else {
                if result != .wouldBlock { return fail("write failed") }
                break
            }
            outputOffset += count
        }
        let drained = outputOffset == output.count
        if drained {
            output.removeAll(keepingCapacity: true)
            outputOffset = 0
        }
        loop.setInterest(fd: fd, readable: true, writable: !drained)
    }
}
