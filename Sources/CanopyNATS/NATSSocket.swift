// NATSSocket -- one blocking TCP socket to a NATS server: connect with a timeout, send all, receive with a timeout.

import CCanopyLinux

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking TCP connection. Reads time out after the receive timeout (the reader thread's ping tick); writes
/// after the send timeout. Not thread-safe: the connection serializes writes and has one reader.
struct NATSSocket {
    let fd: Int32

    enum Received {
        case bytes(Int)
        case timedOut
        case closed
        case failed(Int32)
    }

    /// Connects to `address` (a name is resolved with getaddrinfo; IPv4 and IPv6).
    static func connect(
        to address: NATSServerAddress, timeout: Duration, receiveTimeout: Duration
    ) throws(NATSError) -> NATSSocket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let host = address.host == "localhost" ? "127.0.0.1" : address.host
        let rc = getaddrinfo(host, String(address.port), &hints, &list)
        guard rc == 0, let first = list else {
            throw .cannotConnect("\(address): cannot resolve '\(address.host)' (getaddrinfo \(rc))")
        }
        defer { freeaddrinfo(list) }
        var lastErrno: Int32 = 0
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                lastErrno = ccanopy_errno()
                continue
            }
            // Linux bounds a blocking connect() by SO_SNDTIMEO.
            setTimeout(fd, SO_SNDTIMEO, timeout)
            guard Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
                lastErrno = ccanopy_errno()
                Glibc.close(fd)
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            setTimeout(fd, SO_RCVTIMEO, receiveTimeout)
            return NATSSocket(fd: fd)
        }
        let reason = lastErrno == ECONNREFUSED ? "connection refused" : "errno \(lastErrno)"
        throw .cannotConnect("\(address): \(reason)")
    }

    fileprivate static func setTimeout(_ fd: Int32, _ option: Int32, _ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var tv = timeval(tv_sec: Int(max(0, seconds)), tv_usec: Int(max(0, attoseconds) / 1_000_000_000_000))
        if tv.tv_sec == 0 && tv.tv_usec == 0 { tv.tv_usec = 1000 }
        setsockopt(fd, SOL_SOCKET, option, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Writes every byte; false if the socket failed or the send timed out.
    func sendAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        return bytes.withUnsafeBytes { raw in
            while offset < raw.count {
                let sent = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent > 0 {
                    offset += sent
                } else if sent < 0 && ccanopy_errno() == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
    }

    func receive(into buffer: inout [UInt8]) -> Received {
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { return .bytes(count) }
            if count == 0 { return .closed }
            let code = ccanopy_errno()
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .timedOut }
            return .failed(code)
        }
    }

    /// Wakes a reader blocked in `receive` (it sees the end of the stream); the descriptor stays open.
    func shutdown() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    func close() { Glibc.close(fd) }
}

extension NATSSocket {
    static func setReceiveTimeout(_ fd: Int32, _ duration: Duration) { setTimeout(fd, SO_RCVTIMEO, duration) }
}
