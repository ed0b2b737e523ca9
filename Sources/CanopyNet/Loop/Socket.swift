// Socket -- thin wrappers over the BSD socket calls the loop needs: listen, accept, read, write, close.
import CCanopyLinux

#if canImport(Glibc)
    import Glibc
#endif

/// Result of one non-blocking read or write.
package enum IOResult: Equatable {
    /// This many bytes were transferred (> 0).
    case transferred(Int)
    /// The socket has nothing to read / no room to write right now.
    case wouldBlock
    /// The peer closed its side (reads only).
    case endOfFile
    /// The call failed (ECONNRESET, EPIPE, ...).
    case failed(errno: Int32)
}

/// Socket helpers. All descriptors are non-blocking and close-on-exec.
package enum Socket {
    /// Creates a listening TCP socket bound to `host:port` with `SO_REUSEADDR`.
    /// - Returns: the descriptor and the bound port (the ephemeral one when `port` is 0).
    /// - Throws: ``NetError`` for a bad address or a failed syscall.
    package static func listen(host: String, port: Int, backlog: Int32 = 1024) throws(NetError) -> (
        fd: Int32, port: Int
    ) {
        var (storage, length, family) = try address(host: host, port: port)
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(syscall: "socket", errno: ccanopy_errno()) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let code = ccanopy_errno()
            Glibc.close(fd)
            throw .system(syscall: "bind", errno: code)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = ccanopy_errno()
            Glibc.close(fd)
            throw .system(syscall: "listen", errno: code)
        }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        return (fd, Int(describe(actual).port))
    }

    /// Starts a non-blocking TCP connection to `host:port` with `TCP_NODELAY`.
    /// - Returns: the descriptor; it becomes writable when the connection completes (check ``pendingError(_:)``).
    /// - Throws: ``NetError`` for a bad address or an immediate failure.
    package static func connect(host: String, port: Int) throws(NetError) -> Int32 {
        var (storage, length, family) = try address(host: host, port: port)
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system(syscall: "socket", errno: ccanopy_errno()) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        if rc != 0 && ccanopy_errno() != EINPROGRESS {
            let code = ccanopy_errno()
            Glibc.close(fd)
            throw .system(syscall: "connect", errno: code)
        }
        return fd
    }

    /// The pending error of a socket (`SO_ERROR`): 0 once a non-blocking connect has succeeded.
    package static func pendingError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) == 0 else { return ccanopy_errno() }
        return value
    }

    /// Builds a socket address from an IPv4/IPv6 literal (or `localhost`) and a port.
    private static func address(host: String, port: Int) throws(NetError) -> (
        storage: sockaddr_storage, length: socklen_t, family: Int32
    ) {
        guard (0...65535).contains(port) else { throw .invalidPort(port) }
        var storage = sockaddr_storage()
        let literal = host == "localhost" ? "127.0.0.1" : host
        if literal.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            guard inet_pton(AF_INET6, literal, &address.sin6_addr) == 1 else { throw .invalidAddress(host: host) }
            withUnsafeMutableBytes(of: &storage) { raw in raw.storeBytes(of: address, as: sockaddr_in6.self) }
            return (storage, socklen_t(MemoryLayout<sockaddr_in6>.size), AF_INET6)
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        guard inet_pton(AF_INET, literal, &address.sin_addr) == 1 else { throw .invalidAddress(host: host) }
        withUnsafeMutableBytes(of: &storage) { raw in raw.storeBytes(of: address, as: sockaddr_in.self) }
        return (storage, socklen_t(MemoryLayout<sockaddr_in>.size), AF_INET)
    }

    /// Accepts one pending connection as a non-blocking socket with `TCP_NODELAY`.
    /// - Returns: the descriptor and the peer's `address:port`, or nil when none is pending.
    /// - Throws: ``NetError`` for failures other than "try again" (EMFILE, ENFILE, ENOBUFS, ...).
    package static func accept(listener: Int32) throws(NetError) -> (fd: Int32, peer: String)? {
        while true {
            var peer = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &peer) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    ccanopy_accept4(listener, $0, &length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
                }
            }
            if fd >= 0 {
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                let (host, port) = describe(peer)
                let text = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
                return (fd, text)
            }
            switch ccanopy_errno() {
            case EAGAIN, EWOULDBLOCK: return nil
            // The connection died while queued, or a signal interrupted us: try the next one.
            case EINTR, ECONNABORTED, EPROTO: continue
            case let code: throw .system(syscall: "accept4", errno: code)
            }
        }
    }

    /// Reads up to `buffer.count` bytes.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        while true {
            let count = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if count > 0 { return .transferred(count) }
            if count == 0 { return .endOfFile }
            switch ccanopy_errno() {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(errno: code)
            }
        }
    }

    /// Writes as much of `bytes` as the socket accepts, without raising SIGPIPE.
    package static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> IOResult {
        while true {
            let count = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if count > 0 { return .transferred(count) }
            if count == 0 { return .wouldBlock }
            switch ccanopy_errno() {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            case let code: return .failed(errno: code)
            }
        }
    }

    /// Shuts down the sending side (the peer reads end-of-file) while reads continue.
    package static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes a descriptor (the caller has unregistered it from its loop).
    package static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    private static func describe(_ storage: sockaddr_storage) -> (host: String, port: UInt16) {
        var copy = storage
        return withUnsafeBytes(of: &copy) { raw -> (String, UInt16) in
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            if Int32(storage.ss_family) == AF_INET6 {
                var address = raw.load(as: sockaddr_in6.self)
                inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count))
                return (
                    String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                    UInt16(bigEndian: address.sin6_port)
                )
            }
            var address = raw.load(as: sockaddr_in.self)
            inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
            return (
                String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                UInt16(bigEndian: address.sin_port)
            )
        }
    }
}

extension Socket {
    /// A loopback TCP port that is free now and lies below the kernel's ephemeral range, for a test or bench to
    /// hand a child process that binds it later. A port from the ephemeral range (what binding port 0 gives)
    /// can be taken meanwhile as the local end of an outgoing connection (a NATS route dialling its peers), and
    /// the child then fails to bind it.
    /// - Throws: ``NetError`` when no free port is found in 200 tries.
    package static func freeLoopbackPortBelowEphemeralRange() throws(NetError) -> Int {
        try freeLoopbackPortsBelowEphemeralRange(count: 1)[0]
    }

    /// `count` distinct such ports: each is held bound until all are chosen, so no two are the same (a cluster's
    /// client and route ports drawn one by one could repeat, and the second child to bind one would fail).
    /// - Throws: ``NetError`` when `count` free ports are not found in `count` + 200 tries.
    package static func freeLoopbackPortsBelowEphemeralRange(count: Int) throws(NetError) -> [Int] {
        var ephemeralStart = 32_768
        let fd = Glibc.open("/proc/sys/net/ipv4/ip_local_port_range", O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = Glibc.read(fd, &buffer, buffer.count)
            Glibc.close(fd)
            // "32768\t60999\n": the first number is where the range starts.
            let digits = count > 0 ? buffer[..<count].prefix(while: { $0 >= 0x30 && $0 <= 0x39 }) : []
            let value = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            if value > 2_048 && value < 65_536 { ephemeralStart = value }
        }
        let low = max(1_024, ephemeralStart - 12_000)
        var held: [(fd: Int32, port: Int)] = []
        defer { for probe in held { Glibc.close(probe.fd) } }
        var tries = 0
        while held.count < count {
            guard tries < count + 200 else { throw .system(syscall: "bind", errno: EADDRINUSE) }
            tries += 1
            let port = Int.random(in: low..<ephemeralStart)
            if held.contains(where: { $0.port == port }) { continue }
            if let probe = try? listen(host: "127.0.0.1", port: port, backlog: 1) { held.append((probe.fd, port)) }
        }
        return held.map(\.port)
    }
}
